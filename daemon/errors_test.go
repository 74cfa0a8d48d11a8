package daemon

import (
	"errors"
	"io/fs"
	"testing"
)

// TestErrorfKeepsTheKindOutOfTheText: an engine error matches its kind
// and what its text wraps, for the fronts' codes and exit statuses, but
// its text is only what happened: the kind's own words ("change
// conflict", "not possible in this state") are for code, never shown.
func TestErrorfKeepsTheKindOutOfTheText(t *testing.T) {
	err := Errorf(ErrConflict, "a.go changed since smith read it: %w", fs.ErrNotExist)
	if !errors.Is(err, ErrConflict) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is lost the kind or the wrapped error: %v", err)
	}
	if errors.Is(err, ErrInvalidState) {
		t.Errorf("%v matches another kind", err)
	}
	if got, want := err.Error(), "a.go changed since smith read it: file does not exist"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}
