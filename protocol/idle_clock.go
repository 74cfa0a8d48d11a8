package protocol

import (
	"sync"
	"time"
)

// idleClock is an idle watchdog that counts only the time spent waiting on
// the upstream. The goroutine that reads the body brackets each Read with
// wait and done; time spent anywhere else — a consumer blocked in emit
// because the editor is slow to read, buffers full — does not count, so a
// slow consumer never looks like a silent upstream. The clock fires (calls
// fire, at most once) when the waits since the last byte add up to d.
//
// Methods are safe for concurrent use: the body is read on one goroutine
// while the consumer may shorten the timeout.
type idleClock struct {
	mu     sync.Mutex
	d      time.Duration // 0: disabled
	t      *time.Timer
	waited time.Duration // time waited since the last byte, before the current wait
	since  time.Time     // start of the current wait; zero when not waiting
	off    bool          // stopped for good
}

// newIdleClock returns a clock that is not waiting yet. d <= 0 disables it
// until shorten gives it a duration.
func newIdleClock(d time.Duration, fire func()) *idleClock {
	c := &idleClock{d: max(d, 0)}
	var once sync.Once
	c.t = time.AfterFunc(time.Hour, func() { once.Do(fire) })
	c.t.Stop()
	return c
}

// wait marks the start of a wait on the upstream.
func (c *idleClock) wait() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.since = time.Now()
	c.arm()
}

// done marks the end of a wait; progress says a byte (or the response head)
// arrived, which starts the count afresh.
func (c *idleClock) done(progress bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.Stop()
	if progress {
		c.waited = 0
	} else if !c.since.IsZero() {
		c.waited += time.Since(c.since)
	}
	c.since = time.Time{}
}

// shorten lowers the timeout to d (or sets it on a disabled clock).
func (c *idleClock) shorten(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.d == 0 || d < c.d {
		c.d = d
		if !c.since.IsZero() {
			c.arm()
		}
	}
}

// set gives the clock the timeout d again, longer or shorter (a turn that
// went on after its terminal event gets its idle timeout back).
func (c *idleClock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.d = max(d, 0)
	if !c.since.IsZero() {
		c.t.Stop()
		c.arm()
	}
}

// stop turns the clock off for good.
func (c *idleClock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off = true
	c.t.Stop()
}

// arm starts the timer for what is left of d in the current wait. Called
// with mu held.
func (c *idleClock) arm() {
	if c.d <= 0 || c.off {
		return
	}
	c.t.Reset(max(c.d-c.waited-time.Since(c.since), 0))
}
