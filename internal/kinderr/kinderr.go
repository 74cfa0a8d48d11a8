// Package kinderr gives an error a kind that code matches and people never
// read.
//
// smith's packages classify their errors by sentinel values (the engine's
// ErrConflict or ErrInvalidState, the upstream client's ErrDialogBusy), which
// the fronts map to JSON-RPC codes and exit statuses with errors.Is. Wrapping
// with fmt.Errorf("%w: ...", kind) would also put the sentinel's own words
// ("change conflict: ", "dialog busy: ") in front of every message the user
// reads. An error of this package matches its kind and whatever its text
// wraps, and its text is only what happened.
package kinderr

import "fmt"

// kindError is err, of kind as well.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// Wrap returns an error whose text is err's and which errors.Is matches to
// kind as well as to err (and what err wraps).
func Wrap(kind, err error) error { return &kindError{kind: kind, err: err} }

// Errorf returns an error of kind whose text is format's alone (%w wraps as
// in fmt.Errorf).
func Errorf(kind error, format string, args ...any) error {
	return Wrap(kind, fmt.Errorf(format, args...))
}
