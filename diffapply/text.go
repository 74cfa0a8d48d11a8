package diffapply

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// lines is a file split into lines, each with its own terminator, so that
// a mixed file keeps every line's ending and the final-newline state is
// explicit (the last line's eol is "" when the file does not end in one).
type lines struct {
	text []string // without terminator
	eol  []eol
}

// eol is a line's terminator; a byte, not a string, so that the garbage
// collector has one pointer less to scan per line.
type eol uint8

const (
	eolNone eol = iota // the last line of a file without a final newline
	eolLF
	eolCRLF
)

func (e eol) String() string {
	switch e {
	case eolLF:
		return "\n"
	case eolCRLF:
		return "\r\n"
	}
	return ""
}

// splitLines splits s into lines, into the line tables of a File handed
// back (Release) when they can hold s's lines (b may be nil).
func (b *textBin) splitLines(s string) lines {
	n := strings.Count(s, "\n") + 1
	var l lines
	if b != nil && cap(b.text) >= n && cap(b.eol) >= n {
		l = lines{text: b.text[:0], eol: b.eol[:0]}
		b.text, b.eol = nil, nil
	} else {
		l = lines{text: make([]string, 0, n), eol: make([]eol, 0, n)}
	}
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			l.text = append(l.text, s)
			l.eol = append(l.eol, eolNone)
			break
		}
		t, e := s[:i], eolLF
		if strings.HasSuffix(t, "\r") {
			t, e = t[:len(t)-1], eolCRLF
		}
		l.text = append(l.text, t)
		l.eol = append(l.eol, e)
		s = s[i+1:]
	}
	return l
}

func (l lines) len() int { return len(l.text) }

// convention is the line ending added lines get: CRLF when most lines of
// the file end in CRLF, else LF.
func (l lines) convention() string {
	var crlf, lf int
	for _, e := range l.eol {
		switch e {
		case eolCRLF:
			crlf++
		case eolLF:
			lf++
		}
	}
	if crlf > lf {
		return "\r\n"
	}
	return "\n"
}

// noFinalNewline reports whether the file is non-empty and its last line
// has no terminator.
func (l lines) noFinalNewline() bool {
	return len(l.eol) > 0 && l.eol[len(l.eol)-1] == eolNone
}

// normWS folds whitespace the way `diff -b` does: every run of blanks
// equals any other run, trailing blanks (and a CR) are ignored, but
// whitespace present on one side only still differs.
func normWS(s string) string {
	s = strings.TrimPrefix(s, bom) // models drop the byte-order mark
	if !strings.ContainsAny(s, " \t\r\f\v") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	blank := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' {
			blank = true
			continue
		}
		if blank {
			b.WriteByte(' ')
			blank = false
		}
		b.WriteByte(c)
	}
	return b.String()
}

// bom is the UTF-8 byte-order mark.
const bom = "\ufeff"

// Hash is the pre-image hash Commit checks against: "sha256:" and the hex
// digest of the content.
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HashOfDigest is Hash of content whose SHA-256 hex digest the caller
// computed already (a file read once is not hashed twice).
func HashOfDigest(hexDigest string) string { return "sha256:" + hexDigest }

// HashAbsent is the ExpectHash of a file that must not exist.
const HashAbsent = "absent"

// HashNotTaken is the BeforeHash of an existing file planned with
// Options.NoHash. It is no file's Hash, so a write it guards is refused
// (Commit reports the file changed since the plan).
const HashNotTaken = "not-hashed"
