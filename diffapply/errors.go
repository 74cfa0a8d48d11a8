package diffapply

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrBadDiff: the input is not a diff we can read. *ParseError wraps it.
	ErrBadDiff = errors.New("bad diff")
	// ErrBinary: the diff holds a binary patch, which is refused.
	ErrBinary = errors.New("binary patch")
	// ErrUnsafePath: a target path breaks a confinement rule. *PathError wraps it.
	ErrUnsafePath = errors.New("unsafe path")
	// ErrConflict: a hunk chosen for applying has no safe match. *ConflictError wraps it.
	ErrConflict = errors.New("conflict")
	// ErrStale: a file changed after the plan was made. *StaleError wraps it.
	ErrStale = errors.New("file changed since the plan was made")
)

// fileConflict is an ErrConflict of a whole file (a rename onto a file
// that exists, a deletion chosen in part): its text is the sentence
// alone. With fmt.Errorf("...: %w", ErrConflict) it ended in ": conflict",
// a word for code, which a caller naming the file again made read
// "f: f: ...: conflict".
type fileConflict struct{ msg string }

func (e *fileConflict) Error() string        { return e.msg }
func (e *fileConflict) Is(target error) bool { return target == ErrConflict }

// conflictf returns a fileConflict whose text is format's.
func conflictf(format string, args ...any) error {
	return &fileConflict{msg: fmt.Sprintf(format, args...)}
}

// ParseError reports a diff that cannot be read, with the 1-based line of
// the diff text where the trouble is.
type ParseError struct {
	Line int
	Msg  string
	Err  error // the cause (a go-diff error, ErrBinary), may be nil
}

func (e *ParseError) Error() string {
	s := fmt.Sprintf("diff line %d: %s", e.Line, e.Msg)
	if e.Err != nil && !errors.Is(e.Err, ErrBinary) {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes every ParseError match ErrBadDiff.
func (e *ParseError) Is(target error) bool { return target == ErrBadDiff }

func (e *ParseError) Unwrap() error { return e.Err }

// PathError reports a target path that was refused, naming the rule.
type PathError struct {
	Path string // as written in the diff (or given by the caller)
	Rule string // which rule refused it, e.g. "leaves the workspace root"
	Hint string // what to do instead, when smith knows ("" when not)
}

// Path rules, the values of PathError.Rule.
const (
	RuleEmpty      = "is empty"
	RuleNUL        = "contains a NUL byte"
	RuleDotDot     = "contains a '..' component"
	RuleOutside    = "is an absolute path outside the workspace root"
	RuleGitDir     = "is inside .git"
	RuleSymlink    = "resolves through a symlink to outside the workspace root"
	RuleNotRegular = "is not a regular file"
	RuleState      = "is inside smith's own state folder"
	RuleStrip      = "has too few components for -p"
)

func (e *PathError) Error() string {
	if e.Hint != "" {
		return fmt.Sprintf("refusing path %q: it %s; %s", e.Path, e.Rule, e.Hint)
	}
	return fmt.Sprintf("refusing path %q: it %s", e.Path, e.Rule)
}

// Is makes every PathError match ErrUnsafePath.
func (e *PathError) Is(target error) bool { return target == ErrUnsafePath }

// ConflictError lists the chosen hunks that cannot be applied safely.
type ConflictError struct {
	Hunks []*Hunk
}

func (e *ConflictError) Error() string {
	var parts []string
	for _, h := range e.Hunks {
		parts = append(parts, h.Describe())
	}
	return strings.Join(parts, "; ")
}

func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// StaleError reports a file whose content no longer has the hash the
// write expected.
type StaleError struct {
	Path string
	Want string
	Got  string
	// During is set when the change was seen while writing, just before
	// the file was replaced (another program wrote it meanwhile).
	During bool
}

func (e *StaleError) Error() string {
	if e.During {
		return fmt.Sprintf("%s changed while smith was writing it (expected %s, found %s): another program wrote it; apply again", e.Path, short(e.Want), short(e.Got))
	}
	return fmt.Sprintf("%s changed since the plan was made (expected %s, found %s); plan again", e.Path, short(e.Want), short(e.Got))
}

func (e *StaleError) Is(target error) bool { return target == ErrStale }

func short(h string) string {
	if len(h) > 19 {
		return h[:19]
	}
	return h
}
