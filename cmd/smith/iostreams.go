package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the standard streams of a command, injected so that tests
// capture output. Messages for the user go to Err; Out carries results.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer

	// OutTTY / ErrTTY / InTTY report whether the stream is a terminal.
	InTTY, OutTTY, ErrTTY bool
	// Getenv reads the environment (os.Getenv outside tests).
	Getenv func(string) string
}

func stdStreams() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		InTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
		Getenv: os.Getenv,
	}
}

// ColorOut reports whether output on Out may be colored: only on a terminal
// and never when NO_COLOR is set (https://no-color.org).
func (s *IOStreams) ColorOut() bool { return s.OutTTY && s.Getenv("NO_COLOR") == "" }

// ColorErr is ColorOut for the Err stream.
func (s *IOStreams) ColorErr() bool { return s.ErrTTY && s.Getenv("NO_COLOR") == "" }
