package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/term"
)

// lineInput reads answers and messages from the user: with line editing and
// history on a terminal, plain lines otherwise (scripts, tests with piped
// input). Ctrl-D on an empty line (and Ctrl-C at the prompt) is io.EOF.
type lineInput interface {
	ReadLine(prompt string) (string, error)
}

func newLineInput(s *IOStreams) lineInput {
	if f, ok := s.In.(*os.File); ok && s.InTTY {
		in := &ttyInput{fd: int(f.Fd())}
		rw := struct {
			io.Reader
			io.Writer
		}{ctrlCReader{r: s.In, seen: &in.ctrlC}, s.Err}
		in.t = term.NewTerminal(rw, "")
		return in
	}
	return &plainInput{r: bufio.NewReader(s.In), w: s.Err}
}

type plainInput struct {
	r *bufio.Reader
	w io.Writer
}

func (p *plainInput) ReadLine(prompt string) (string, error) {
	fmt.Fprint(p.w, prompt)
	line, err := p.r.ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// ttyInput uses x/term's line editor, which keeps a history of the lines
// read (arrow keys recall them). The terminal is raw only while reading.
type ttyInput struct {
	fd int
	t  *term.Terminal

	mu    sync.Mutex
	old   *term.State // the mode to restore while a line is being read
	ctrlC atomic.Bool // a Ctrl-C byte was read (x/term reports it as io.EOF, like Ctrl-D)
}

// errCtrlC is a Ctrl-C typed at a prompt. It matches io.EOF, which is what
// callers that do not care see (the chat prompt leaves on either); the
// hunk prompt tells it apart: Ctrl-C interrupts, Ctrl-D ends the input.
var errCtrlC = fmt.Errorf("interrupted (Ctrl-C): %w", io.EOF)

// ctrlCReader notes a Ctrl-C byte in what the terminal reads.
type ctrlCReader struct {
	r    io.Reader
	seen *atomic.Bool
}

func (c ctrlCReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if bytes.IndexByte(p[:n], 3) >= 0 {
		c.seen.Store(true)
	}
	return n, err
}

func (p *ttyInput) ReadLine(prompt string) (string, error) {
	old, err := term.MakeRaw(p.fd)
	if err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}
	p.mu.Lock()
	p.old = old
	p.mu.Unlock()
	defer p.restore()
	p.ctrlC.Store(false)
	p.t.SetPrompt(prompt)
	line, err := p.t.ReadLine()
	if err == io.EOF && p.ctrlC.Load() {
		err = errCtrlC
	}
	return line, err
}

// restore gives the terminal its normal mode back. It is also called when
// a signal ends a prompt that is still reading (the reader is abandoned,
// the process is about to exit).
func (p *ttyInput) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.old != nil {
		term.Restore(p.fd, p.old)
		p.old = nil
	}
}
