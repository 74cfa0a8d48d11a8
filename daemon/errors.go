package daemon

import (
	"errors"

	"github.com/smith-dev/smith/internal/kinderr"
	"github.com/smith-dev/smith/protocol"
)

// upstreamError is an error of the upstream's client wrapped in the
// engine's own kind (ErrUpstreamUnreachable, ErrUpstream, ErrDialogBusy,
// ErrUnknownDialog): its text is the client's, and errors.Is finds both.
type upstreamError struct {
	kind error
	err  error
}

func (e *upstreamError) Error() string   { return e.err.Error() }
func (e *upstreamError) Unwrap() []error { return []error{e.kind, e.err} }

// wrapUpstream wraps *err, when it came from the upstream's client and is
// not one of the engine's errors yet, in the engine's kind for it. The
// engine's exported methods that talk to the upstream defer it, so that
// the fronts map the engine's errors only.
func wrapUpstream(err *error) {
	if *err == nil {
		return
	}
	var ue *upstreamError
	if errors.As(*err, &ue) {
		return
	}
	var kind error
	var he *protocol.HTTPError
	var ce *protocol.ContentTypeError
	switch {
	case errors.Is(*err, ErrDialogBusy), errors.Is(*err, ErrUnknownDialog), errors.Is(*err, ErrUnsupported):
		return // already the engine's
	case errors.Is(*err, protocol.ErrUnreachable), errors.Is(*err, protocol.ErrWrongWorkspace):
		kind = ErrUpstreamUnreachable
	case errors.Is(*err, protocol.ErrDialogBusy):
		kind = ErrDialogBusy
	case errors.Is(*err, protocol.ErrNotFound), errors.As(*err, &he), errors.As(*err, &ce):
		kind = ErrUpstream
	default:
		return
	}
	*err = &upstreamError{kind: kind, err: *err}
}

// Errorf returns an error of kind (one of the engine's Err values) whose
// text is format's alone: it says what happened, to which file and what to
// do, and leaves out the kind's own words, which are for code (errors.Is
// matches the kind, for the fronts' codes and the exit status, and any
// error the text wraps with %w; internal/kinderr). The engine makes its
// errors with it, and so do the fronts that write for it (an editor's
// workspace/applyEdit, an ACP client's fs/write_text_file).
func Errorf(kind error, format string, args ...any) error {
	return kinderr.Errorf(kind, format, args...)
}
