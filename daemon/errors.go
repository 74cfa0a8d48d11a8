package daemon

import (
	"errors"

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
