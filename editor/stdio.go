package editor

import (
	"errors"
	"os"
)

// Stdio is the process's stdin and stdout as one stream, for serving one
// editor. Build it with NewStdio.
type Stdio struct {
	in          *os.File
	out         *os.File
	nonblocking bool // fd 0 was switched to non-blocking; Close switches it back
}

func (s *Stdio) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s *Stdio) Write(p []byte) (int, error) { return s.out.Write(p) }

// Close closes both ends. The blocking mode of fd 0 is shared with whoever
// else holds the descriptor (the shell of a terminal), so it is restored
// first.
func (s *Stdio) Close() error {
	if s.nonblocking {
		restoreBlocking()
	}
	return errors.Join(s.in.Close(), s.out.Close())
}
