package main

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
)

type signalCtxKey struct{}

// SIGWINCH is ignored by default, so sending it to the test process is
// harmless even where no handler is installed.

func TestSignalContextInstallsOnFirstUse(t *testing.T) {
	parent := context.WithValue(context.Background(), signalCtxKey{}, "v")
	ctx, stop := newSignalContext(parent, syscall.SIGWINCH)
	defer stop()
	c := ctx.(*signalContext)
	if got := ctx.Value(signalCtxKey{}); got != "v" {
		t.Fatalf("Value before use = %v, want the parent's %q", got, "v")
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err before use = %v", err)
	}
	if c.n.Load() != nil {
		t.Fatal("the handler was installed before anything waited on the context (Err asks, it does not wait)")
	}
	child, cancelChild := context.WithCancel(ctx) // calls Done: installs
	defer cancelChild()
	if c.n.Load() == nil {
		t.Fatal("deriving a context did not install the handler")
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err before any signal = %v", err)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	<-child.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("Err after the signal = %v, want context.Canceled", ctx.Err())
	}
	if cause := context.Cause(child); cause == nil || !strings.Contains(cause.Error(), "signal") {
		t.Errorf("the derived context's cause = %v, want the signal", cause)
	}
	if got := ctx.Value(signalCtxKey{}); got != "v" {
		t.Errorf("Value after use = %v, want the parent's %q", got, "v")
	}
}

func TestSignalContextStopWithoutUse(t *testing.T) {
	ctx, stop := newSignalContext(context.Background(), syscall.SIGWINCH)
	stop()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err after stop = %v, want context.Canceled (as after signal.NotifyContext's stop)", ctx.Err())
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Done is not closed after stop")
	}
}

// A command that never waits on its context leaves the handler uninstalled
// (no signal thread started); smith version is one.
func TestVersionLeavesSignalsAlone(t *testing.T) {
	var out strings.Builder
	s := &IOStreams{In: strings.NewReader(""), Out: &out, Err: &out, Getenv: func(string) string { return "" }}
	root := newRootCmdFor(s, []string{"version"})
	ctx, stop := newSignalContext(context.Background(), syscall.SIGWINCH)
	defer stop()
	seen := ctx.(*signalContext)
	root.SetArgs([]string{"version"})
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "smith ") {
		t.Fatalf("smith version printed %q", out.String())
	}
	if seen.n.Load() != nil {
		t.Error("smith version installed the signal handler")
	}
}
