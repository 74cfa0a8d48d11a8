package kinderr

import (
	"errors"
	"io/fs"
	"testing"
)

var errKind = errors.New("a kind's own words")

// TestTheKindIsForCodeOnly: the error matches its kind and what its text
// wraps, and its text holds neither the kind's words nor anything else
// but what it says.
func TestTheKindIsForCodeOnly(t *testing.T) {
	for _, err := range []error{
		Errorf(errKind, "a.go changed since smith read it: %w", fs.ErrNotExist),
		Wrap(errKind, Errorf(fs.ErrNotExist, "a.go changed since smith read it: file does not exist")),
	} {
		if !errors.Is(err, errKind) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("errors.Is lost the kind or the wrapped error: %v", err)
		}
		if errors.Is(err, fs.ErrExist) {
			t.Errorf("%v matches an error it does not wrap", err)
		}
		if got, want := err.Error(), "a.go changed since smith read it: file does not exist"; got != want {
			t.Errorf("text %q, want %q", got, want)
		}
	}
}
