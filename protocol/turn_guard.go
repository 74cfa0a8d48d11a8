package protocol

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of ClientConfig.ProgressTimeout and ClientConfig.TurnLimit.
const (
	DefaultProgressTimeout = 5 * time.Minute
	DefaultTurnLimit       = time.Hour
)

var (
	// ErrNoProgress is the cause of a turn that emitted no event for
	// ClientConfig.ProgressTimeout: bytes may have kept coming (keep-alive
	// comments, a byte at a time), but nothing the user could see.
	ErrNoProgress = errors.New("no progress")
	// ErrTurnLimit is the cause of a turn that ran past ClientConfig.TurnLimit.
	ErrTurnLimit = errors.New("turn limit reached")
)

// NoProgressError ends a turn whose upstream sent no event for too long.
type NoProgressError struct {
	URL     string
	Timeout string // e.g. "5m0s"
}

func (e *NoProgressError) Error() string {
	return fmt.Sprintf("%s: no event for %s (only keep-alives or stray bytes); the upstream made no progress", e.URL, e.Timeout)
}

// Is makes errors.Is(err, ErrNoProgress) true.
func (e *NoProgressError) Is(target error) bool { return target == ErrNoProgress }

// TurnLimitError ends a turn that ran longer than the turn limit.
type TurnLimitError struct {
	URL   string
	Limit string
}

func (e *TurnLimitError) Error() string {
	return fmt.Sprintf("%s: the turn ran for %s, the turn limit (turn_limit)", e.URL, e.Limit)
}

// Is makes errors.Is(err, ErrTurnLimit) true.
func (e *TurnLimitError) Is(target error) bool { return target == ErrTurnLimit }

// turnGuard ends a turn that makes no progress or runs too long.
//
// The idle watchdog counts bytes, so an upstream that sends keep-alive
// comments, or one byte every half second, never trips it while the turn
// goes nowhere. Progress here is an event the turn emits (any kind but a
// violation): comments, pings and bytes that do not complete an event do
// not count. The time emit spends blocked (an editor slow to read) does not
// count either. The turn limit counts everything, from the request on.
//
// When either fires, fail is called once with the cause (a
// *NoProgressError or *TurnLimitError); the caller closes the request with
// it, and the turn ends interrupted with the cause as its reason.
type turnGuard struct {
	progress time.Duration // 0: off
	last     atomic.Int64  // unix nanoseconds of the last progress
	inEmit   atomic.Bool
	pt, lt   *time.Timer
	once     sync.Once
	fail     func(error)
	url      string
	fired    chan struct{} // closed when fail was called
	cause    error
}

// newTurnGuard starts the guard. Durations <= 0 turn a check off.
func newTurnGuard(url string, progress, limit time.Duration, fail func(error)) *turnGuard {
	g := &turnGuard{progress: max(progress, 0), fail: fail, url: url, fired: make(chan struct{})}
	g.last.Store(time.Now().UnixNano())
	if g.progress > 0 {
		g.pt = time.AfterFunc(g.progress, g.checkProgress)
	}
	if limit > 0 {
		g.lt = time.AfterFunc(limit, func() { g.trip(&TurnLimitError{URL: url, Limit: limit.String()}) })
	}
	return g
}

// checkProgress runs when the progress timer fires: the turn failed unless
// there was progress since (then the timer is set for the rest) or emit is
// still running.
func (g *turnGuard) checkProgress() {
	since := time.Since(time.Unix(0, g.last.Load()))
	if g.inEmit.Load() || since < g.progress {
		g.pt.Reset(g.progress - min(since, g.progress) + time.Millisecond)
		return
	}
	g.trip(&NoProgressError{URL: g.url, Timeout: g.progress.String()})
}

func (g *turnGuard) trip(cause error) {
	g.once.Do(func() {
		g.cause = cause
		close(g.fired)
		g.fail(cause)
	})
}

// wrap returns emit with progress accounting: each event but a violation
// is progress, and the time emit blocks does not count.
func (g *turnGuard) wrap(emit func(Event)) func(Event) {
	if g.pt == nil {
		return emit
	}
	return func(ev Event) {
		g.inEmit.Store(true)
		if emit != nil {
			emit(ev)
		}
		if ev.Type != KindViolation {
			g.last.Store(time.Now().UnixNano())
		}
		g.inEmit.Store(false)
	}
}

// stop turns the guard off.
func (g *turnGuard) stop() {
	if g.pt != nil {
		g.pt.Stop()
	}
	if g.lt != nil {
		g.lt.Stop()
	}
}
