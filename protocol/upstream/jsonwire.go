package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// jsonStyle is how a server serialises its payloads. Clients must not care,
// but a faithful server reproduces it, so tests can pin the exact bytes.
type jsonStyle int

const (
	// styleNode is JSON.stringify: no spaces, raw UTF-8.
	styleNode jsonStyle = iota
	// stylePython is json.dumps(obj, ensure_ascii=False): ", " and ": "
	// separators, raw UTF-8 (AgentSmithy v1/v2, textbook, oracle).
	stylePython
	// stylePythonASCII is json.dumps(obj): Python separators and every
	// non-ASCII character as a lowercase \uXXXX escape, astral characters
	// as surrogate pairs (AgentSmithy v0).
	stylePythonASCII
)

// marshal encodes v (structs keep their field order, which is how the
// servers' key order is reproduced) in the given style.
func marshal(style jsonStyle, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // neither Python nor Node escape <, > and &
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	compact := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if style == styleNode {
		return unescapeLineSeparators(compact), nil
	}
	return pythonize(compact, style == stylePythonASCII), nil
}

// mustMarshal is marshal for payloads built from the server's own types,
// which always encode.
func mustMarshal(style jsonStyle, v any) []byte {
	b, err := marshal(style, v)
	if err != nil {
		panic(err)
	}
	return b
}

// unescapeLineSeparators undoes encoding/json's escaping of U+2028 and
// U+2029, which JSON.stringify and json.dumps(ensure_ascii=False) emit raw.
func unescapeLineSeparators(b []byte) []byte {
	b = bytes.ReplaceAll(b, []byte(`\u2028`), []byte("\u2028"))
	return bytes.ReplaceAll(b, []byte(`\u2029`), []byte("\u2029"))
}

// pythonize rewrites compact JSON from encoding/json into json.dumps
// output: a space after every ',' and ':' outside strings, and optionally
// ASCII-only strings. It relies on the input being valid compact JSON.
func pythonize(in []byte, ascii bool) []byte {
	out := make([]byte, 0, len(in)+len(in)/8)
	inString := false
	for i := 0; i < len(in); {
		c := in[i]
		if !inString {
			out = append(out, c)
			switch c {
			case '"':
				inString = true
			case ',', ':':
				out = append(out, ' ')
			}
			i++
			continue
		}
		switch {
		case c == '\\':
			// Keep escapes, except \u2028/\u2029 which Python leaves raw
			// unless it must be ASCII.
			if in[i+1] == 'u' && !ascii && (string(in[i+2:i+6]) == "2028" || string(in[i+2:i+6]) == "2029") {
				out = utf8.AppendRune(out, rune(0x2000+hexVal(in[i+4])*16+hexVal(in[i+5])))
				i += 6
				continue
			}
			n := 2
			if in[i+1] == 'u' {
				n = 6
			}
			out = append(out, in[i:i+n]...)
			i += n
		case c == '"':
			out = append(out, c)
			inString = false
			i++
		case c >= utf8.RuneSelf && ascii:
			r, size := utf8.DecodeRune(in[i:])
			if r > 0xFFFF {
				r -= 0x10000
				out = fmt.Appendf(out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
			i += size
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	default:
		return int(c-'A') + 10
	}
}
