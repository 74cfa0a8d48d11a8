// Package diffapply applies unified diffs written by chat agents: it parses
// them with go-diff, repairs what agents get wrong, confines every path to
// the workspace, locates each hunk with a documented matching ladder, and
// writes all files of a patch atomically or none. It never guesses: a hunk
// that matches equally well in more than one place, or only beyond the
// ladder, is a conflict. It is a pure library: no editor, no network.
//
// # Use
//
//	p, err := diffapply.Plan(root, diff, diffapply.Options{})
//	// err: the diff as a whole was refused (unreadable, binary, unsafe path).
//	hunks, files := p.Conflicts()      // hunks (or files) that cannot apply
//	err = p.Apply(ctx, nil, journalDir) // nil = every hunk; or chosen hunk IDs
//
// PlanFiles (PlanReader for a diff in a file) plans one file at a time and
// hands each File to a callback instead of keeping them all: a big diff
// then costs its size and one file's working set, not the whole patch
// before and after. Plan collects the same Files into a Patch.
//
// Plan writes nothing. Every File carries its pre-image (Before, with
// BeforeHash), the result of its matching hunks (After), per-hunk IDs
// (Hunk.ID, 1-based across the patch; Hunk.Index within the file), the
// match Level, Line, Offset and Fuzz, or a Conflict with the nearest
// place and the first difference. File.Render(ids) gives the content for
// any subset of hunks (for editor buffers), File.Diff(ids) the as-applied
// diff (File.AppliedDiff and File.AppliedPlan write it from the plan, for
// a caller that records it), File.ReverseDiff(ids) a diff that takes
// those hunks back out.
// Options.ReadFile plans against text the caller supplies (open buffers),
// Options.Target overrides the headers' path, PlanContent plans a
// whole-file write. Commit and Recover are the atomic multi-file
// transaction on their own. A Patch is not modified after Plan returns
// and may be read from several goroutines.
//
// # Repairs (before and around go-diff)
//
// go-diff does not check hunk counts, drops a bare "@@" silently, rejects
// "@@ ... @@", splits a hunk at a removed "--- x" line followed by an
// added "+++ y" line, and keeps prose in Extended. So the diff is scanned
// first (scan.go): Markdown fences and prose are dropped; hunk bodies are
// bounded and recounted, and the body wins over wrong counts; headers
// without numbers become hunks located by content only; AgentSmithy's
// difflib output (a blank line after every body line, no "\ No newline"
// markers) is detected by its counts and rewritten; any "\ " line counts as
// the no-newline marker; trailing blank lines after a hunk are formatting.
// Then go-diff parses each file header and the hunks (ParseOptions.KeepCR).
// Git extended headers give new/deleted files, renames, copies and modes;
// binary patches are refused (ErrBinary).
//
// # Paths
//
// Names are read as git's a/ and b/ prefixes, AgentSmithy's "a//abs/path",
// absolute paths inside the root, GNU "old/x new/x" directories, or as
// written — whichever names an existing file; Options.Strip forces -pN.
// Every path must then stay inside the root after resolving symlinks: "..",
// absolute paths outside, NUL bytes, anything in .git (any case), symlinks
// that lead out, and non-regular files are refused with a *PathError that
// names the path and the rule (git's t4139).
//
// # The matching ladder
//
// Hunks are matched against the pre-image only, so text written by one
// hunk can never be matched by another, and hunk order does not matter.
// Rung by rung, every unplaced hunk of a file gets a try before the next
// rung, so a hunk that fits where it says claims its lines first:
//
//	exact       the old lines (context and '-') equal the file at the stated line
//	offset      the same text at exactly one other place in the file
//	unique      the same text, for hunks without line numbers: must be unique
//	whitespace  equal after folding blank runs and trailing blanks (diff -b),
//	            at the stated line or unique in the file
//	fuzz        whitespace-insensitive with 1, then 2, context lines dropped
//	            at each end, at the stated line or unique in the file
//
// Line terminators are not content: "exact" ignores CR/LF differences.
// On the full-context rungs a numbered hunk without trailing context must
// end the file, one at line 1 without leading context must start it (git's
// anchoring, t4113); the fuzz rungs drop that anchoring, as git -C does.
// A hunk whose old side ends in a no-newline marker must end the file. Strict
// stops after the exact rungs. Away from the stated line every rung needs a
// unique match: line numbers from agents are hints, and two places that
// fit equally well are a conflict however near one of them is (git's
// find_pos would take the nearer; a randomized drift test showed that
// choice writing wrong results where uniqueness refuses). Fuzz must keep
// at least 3 old lines. A hunk with no old lines at all (a -U0 insertion)
// has nothing to verify its place and only goes into an empty file.
//
// # Line endings
//
// Context lines are written as the file has them (bytes and ending). How
// added lines end depends on whether the diff knows the file's carriage
// returns, decided per hunk: when every context and removed line of the
// hunk ends in CR exactly where the file's line does (a byte-exact git
// diff, LF-only diffs of LF files included), added lines are written as the
// diff has them, so a commit that adds an LF line to a CRLF file, or turns
// "-foo\r" into "+foo", is reproduced. When the hunk matched only by
// ignoring CRs (a model's LF diff against a CRLF file, a CRLF diff against
// an LF file), its line ends carry no information and added lines take the
// file's convention: CRLF when most lines end in CRLF, so a CRLF file stays
// CRLF and a mixed file keeps each untouched line's own ending. Into a new
// or empty file each line goes with the diff's own ending for it. The final
// newline follows the diff's markers where the last hunk reaches the end of
// the file, and the file's own state when the diff has no marker.
//
// # Writing
//
// Commit writes temp files next to the targets, fsyncs them and renames
// them into place, keeping modes; any failure restores the files already
// renamed. Its journal (outside the workspace) is a write-ahead log: a
// process killed mid-commit leaves every file before or after, and Recover
// rolls a committed transaction forward and an uncommitted one back.
// Write.ExpectHash (set from the plan's BeforeHash) refuses to overwrite a
// file that changed after planning, and each target is verified again just
// before its rename.
//
// # Paths
//
// Workspace is the one set of confinement rules for every writer (see
// its doc); every read and write goes through an os.Root at the root.
package diffapply
