package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

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
		rw := struct {
			io.Reader
			io.Writer
		}{s.In, s.Err}
		return &ttyInput{fd: int(f.Fd()), t: term.NewTerminal(rw, "")}
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
}

func (p *ttyInput) ReadLine(prompt string) (string, error) {
	old, err := term.MakeRaw(p.fd)
	if err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}
	defer term.Restore(p.fd, old)
	p.t.SetPrompt(prompt)
	return p.t.ReadLine()
}
