// Package diffapply applies unified diffs written by chat agents: it parses
// them with go-diff, repairs what agents get wrong, confines every path to the
// workspace, locates each hunk with a documented matching ladder, and writes
// all files of a patch atomically or none. It never guesses: a hunk that
// matches in more than one place, or only beyond the ladder, is a conflict.
//
// It is a pure library: no editor, no network.
package diffapply
