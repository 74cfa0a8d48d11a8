package main

import (
	"bufio"
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

// buffered returns streams that buffer Out and Err, and the function that
// flushes them (call it before returning to the caller of the command).
// Writes keep their order across the two streams: writing to one flushes
// what is buffered for the other first, so a terminal or a file that gets
// both (2>&1) sees the same bytes in the same order as unbuffered writes,
// in a few large writes instead of one per line (smith apply printed a
// 2 000-hunk report with 2 000 writes).
func (s *IOStreams) buffered() (*IOStreams, func() error) {
	o := &orderedBuffers{out: bufio.NewWriterSize(s.Out, 32<<10), err: bufio.NewWriterSize(s.Err, 32<<10)}
	b := *s
	b.Out, b.Err = orderedWriter{o, o.out}, orderedWriter{o, o.err}
	return &b, o.flush
}

// orderedBuffers are the two buffers of IOStreams.buffered; last is the one
// written to last, the only one that may hold bytes.
type orderedBuffers struct {
	out, err, last *bufio.Writer
}

func (o *orderedBuffers) flush() error {
	if o.last == nil {
		return nil
	}
	return o.last.Flush()
}

type orderedWriter struct {
	o *orderedBuffers
	w *bufio.Writer
}

func (w orderedWriter) Write(p []byte) (int, error) {
	if last := w.o.last; last != nil && last != w.w {
		if err := last.Flush(); err != nil {
			return 0, err
		}
	}
	w.o.last = w.w
	return w.w.Write(p)
}
