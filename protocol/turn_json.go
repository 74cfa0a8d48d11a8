package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// payload is one SSE data buffer parsed as a top-level JSON object: the
// members' names and raw values, validated once.
//
// Why not encoding/json: reflection-based decoding of every chat delta into
// a struct costs several times what go-sse spends framing it, and the
// dialects look at only two or three members of each payload. This scanner
// validates the whole text with JSON's grammar (FuzzPayload checks it
// against json.Valid) and hands out members as substrings, so a delta
// without escapes costs no allocation. Nested values that a dialect needs as
// structures are decoded with encoding/json.
type payload struct {
	raw     string
	members []member
}

// member locates one member in raw by offsets (no pointers: appending one
// costs no write barrier).
type member struct {
	k0, k1 int  // the name, without quotes
	v0, v1 int  // the raw JSON value
	keyEsc bool // the name has escapes and must be decoded to compare
}

func (p *payload) key(m *member) string {
	if m.keyEsc {
		return unquote(p.raw[m.k0-1 : m.k1+1])
	}
	return p.raw[m.k0:m.k1]
}

func (p *payload) val(m *member) string { return p.raw[m.v0:m.v1] }

// jsonKind is the JSON type of a raw value, from its first byte.
func jsonKind(v string) byte {
	switch c := v[0]; c {
	case '"':
		return 's'
	case '{':
		return 'o'
	case '[':
		return 'a'
	case 't', 'f':
		return 'b'
	case 'n':
		return 'z'
	default:
		return 'n'
	}
}

var errNotObject = errors.New("not a JSON object")

// parse resets p to the object in s. It returns an error naming the
// offset for invalid JSON, and errNotObject for valid JSON that is not an
// object.
func (p *payload) parse(s string) error {
	p.raw, p.members = s, p.members[:0]
	sc := scanner{s: s}
	sc.ws()
	if sc.i < len(s) && s[sc.i] == '{' {
		if err := sc.object(p); err != nil {
			return err
		}
	} else if err := sc.value(0); err != nil {
		return err
	} else {
		sc.ws()
		if sc.i != len(s) {
			return sc.fail("after top-level value")
		}
		return errNotObject
	}
	sc.ws()
	if sc.i != len(s) {
		return sc.fail("after top-level value")
	}
	return nil
}

// get returns the raw value of the member named key (the last one wins, as
// in encoding/json).
func (p *payload) get(key string) (string, bool) {
	for i := len(p.members) - 1; i >= 0; i-- {
		m := &p.members[i]
		if m.k1-m.k0 == len(key) && p.raw[m.k0:m.k1] == key || m.keyEsc && p.key(m) == key {
			return p.val(m), true
		}
	}
	return "", false
}

func (p *payload) has(key string) bool { _, ok := p.get(key); return ok }

// typeName returns the "type" member when it is a string.
func (p *payload) typeName() (string, bool) {
	v, ok := p.get("type")
	if !ok || jsonKind(v) != 's' {
		return "", false
	}
	return unquote(v), true
}

// fieldErr describes a member that is missing or has the wrong type.
type fieldErr struct {
	key, want string
	missing   bool
}

func (e *fieldErr) Error() string {
	if e.missing {
		return fmt.Sprintf("required field %q is missing", e.key)
	}
	return fmt.Sprintf("field %q must be %s", e.key, e.want)
}

// str returns a required string member.
func (p *payload) str(key string) (string, error) {
	v, ok := p.get(key)
	if !ok {
		return "", &fieldErr{key: key, missing: true}
	}
	if jsonKind(v) != 's' {
		return "", &fieldErr{key: key, want: "a string"}
	}
	return unquote(v), nil
}

// strOr returns a string member, "" when it is absent or not a string.
func (p *payload) strOr(key string) string {
	v, _ := p.str(key)
	return v
}

// optStr returns an optional string member: "" when absent or null.
func (p *payload) optStr(key string) (string, error) {
	v, ok := p.get(key)
	if !ok || v == "null" {
		return "", nil
	}
	if jsonKind(v) != 's' {
		return "", &fieldErr{key: key, want: "a string or null"}
	}
	return unquote(v), nil
}

// optInt returns an optional integer member: nil when absent or null.
func (p *payload) optInt(key string) (*int, error) {
	v, ok := p.get(key)
	if !ok || v == "null" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, &fieldErr{key: key, want: "an integer or null"}
	}
	return &n, nil
}

// optNum returns an optional number member: 0, false when absent or null.
func (p *payload) optNum(key string) (float64, bool, error) {
	v, ok := p.get(key)
	if !ok || v == "null" {
		return 0, false, nil
	}
	if jsonKind(v) != 'n' {
		return 0, false, &fieldErr{key: key, want: "a number"}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false, &fieldErr{key: key, want: "a number"}
	}
	return f, true, nil
}

// rawMsg returns a member's raw value as a RawMessage (a copy), nil if absent.
func (p *payload) rawMsg(key string) json.RawMessage {
	v, ok := p.get(key)
	if !ok {
		return nil
	}
	return json.RawMessage(v)
}

// unquote decodes a raw JSON string that the scanner has validated. Without
// escapes it is a substring (no allocation); the common one-letter escapes
// are decoded here, \\u escapes by encoding/json (surrogate pairs and lone
// surrogates need its exact rules).
func unquote(v string) string {
	body := v[1 : len(v)-1]
	i := strings.IndexByte(body, '\\')
	if i < 0 {
		return body
	}
	if strings.Contains(body[i:], "\\u") {
		var s string
		if err := json.Unmarshal([]byte(v), &s); err != nil {
			return body // unreachable: the scanner validated v
		}
		return s
	}
	b := make([]byte, 0, len(body))
	for {
		b = append(b, body[:i]...)
		switch body[i+1] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		default: // '"', '\\', '/'
			b = append(b, body[i+1])
		}
		body = body[i+2:]
		if i = strings.IndexByte(body, '\\'); i < 0 {
			return string(append(b, body...))
		}
	}
}

// unquoteShort decodes body, the inside of a JSON string, in one pass and
// reports true, if body is a whole JSON string's inside whose escapes are
// all one-letter ones (\" \\ \/ \b \f \n \r \t); otherwise it reports
// false, for the scanner and unquote to decide (a \u escape, a control
// byte, a bad escape, an unescaped quote: the string ends before body
// does). Why: a delta with a quote or a newline in it (a seventh of the
// bench stream's) was scanned twice, by the scanner and by unquote, and
// decoded into two allocations. FuzzUnquoteShort holds it to
// encoding/json.
func unquoteShort(body string) (string, bool) {
	var b strings.Builder
	b.Grow(len(body))
	start := 0
	for i := 0; i < len(body); {
		if i+8 <= len(body) {
			m := specialBits(load64(body, i))
			if m == 0 {
				i += 8
				continue
			}
			i += firstMarked(m)
		}
		c := body[i]
		if c != '\\' {
			if c == '"' || c < 0x20 {
				return "", false
			}
			i++
			continue
		}
		if i+1 == len(body) {
			return "", false // the closing quote is escaped
		}
		b.WriteString(body[start:i])
		switch e := body[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		default: // 'u', or not an escape
			return "", false
		}
		i += 2
		start = i
	}
	b.WriteString(body[start:])
	return b.String(), true
}

// scanner validates JSON text (RFC 8259) and records the top-level members.
type scanner struct {
	s   string
	i   int
	esc int // escapes seen so far (keys without one need no decoding)
}

const maxDepth = 10000 // encoding/json's nesting limit

func (sc *scanner) fail(what string) error {
	if sc.i >= len(sc.s) {
		return fmt.Errorf("invalid JSON: unexpected end %s", what)
	}
	return fmt.Errorf("invalid JSON: unexpected %q at offset %d %s", sc.s[sc.i], sc.i, what)
}

func (sc *scanner) ws() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// object scans the top-level object into p.members.
func (sc *scanner) object(p *payload) error {
	ms, err := sc.members(p.members[:0])
	p.members = ms // one store of the slice header (a write barrier) per payload, not per member
	return err
}

func (sc *scanner) members(ms []member) ([]member, error) {
	sc.i++ // '{'
	sc.ws()
	if sc.i < len(sc.s) && sc.s[sc.i] == '}' {
		sc.i++
		return ms, nil
	}
	for {
		sc.ws()
		if sc.i >= len(sc.s) || sc.s[sc.i] != '"' {
			return ms, sc.fail("looking for an object key")
		}
		k0, esc0 := sc.i, sc.esc
		if err := sc.str(); err != nil {
			return ms, err
		}
		k1, kEsc := sc.i-1, sc.esc != esc0
		sc.ws()
		if sc.i >= len(sc.s) || sc.s[sc.i] != ':' {
			return ms, sc.fail("after an object key")
		}
		sc.i++
		sc.ws()
		v0 := sc.i
		if err := sc.value(1); err != nil {
			return ms, err
		}
		ms = append(ms, member{k0: k0 + 1, k1: k1, v0: v0, v1: sc.i, keyEsc: kEsc})
		sc.ws()
		if sc.i >= len(sc.s) {
			return ms, sc.fail("in an object")
		}
		switch sc.s[sc.i] {
		case ',':
			sc.i++
		case '}':
			sc.i++
			return ms, nil
		default:
			return ms, sc.fail("after an object value")
		}
	}
}

func (sc *scanner) value(depth int) error {
	if depth > maxDepth {
		return errors.New("invalid JSON: nested too deeply")
	}
	if sc.i >= len(sc.s) {
		return sc.fail("looking for a value")
	}
	switch c := sc.s[sc.i]; {
	case c == '"':
		return sc.str()
	case c == '{':
		return sc.nested(depth, '}', true)
	case c == '[':
		return sc.nested(depth, ']', false)
	case c == 't':
		return sc.lit("true")
	case c == 'f':
		return sc.lit("false")
	case c == 'n':
		return sc.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return sc.num()
	}
	return sc.fail("looking for a value")
}

// nested scans a nested object or array.
func (sc *scanner) nested(depth int, closer byte, isObj bool) error {
	if isObj {
		sc.i++
		sc.ws()
		if sc.i < len(sc.s) && sc.s[sc.i] == '}' {
			sc.i++
			return nil
		}
		for {
			sc.ws()
			if sc.i >= len(sc.s) || sc.s[sc.i] != '"' {
				return sc.fail("looking for an object key")
			}
			if err := sc.str(); err != nil {
				return err
			}
			sc.ws()
			if sc.i >= len(sc.s) || sc.s[sc.i] != ':' {
				return sc.fail("after an object key")
			}
			sc.i++
			sc.ws()
			if err := sc.value(depth + 1); err != nil {
				return err
			}
			if done, err := sc.sep(closer); done || err != nil {
				return err
			}
		}
	}
	sc.i++
	sc.ws()
	if sc.i < len(sc.s) && sc.s[sc.i] == ']' {
		sc.i++
		return nil
	}
	for {
		sc.ws()
		if err := sc.value(depth + 1); err != nil {
			return err
		}
		if done, err := sc.sep(closer); done || err != nil {
			return err
		}
	}
}

func (sc *scanner) sep(closer byte) (bool, error) {
	sc.ws()
	if sc.i >= len(sc.s) {
		return false, sc.fail("in a nested value")
	}
	switch sc.s[sc.i] {
	case ',':
		sc.i++
		return false, nil
	case closer:
		sc.i++
		return true, nil
	}
	return false, sc.fail("after a nested value")
}

func (sc *scanner) lit(word string) error {
	if !strings.HasPrefix(sc.s[sc.i:], word) {
		return sc.fail("in a literal")
	}
	sc.i += len(word)
	return nil
}

func (sc *scanner) str() error {
	sc.i++ // opening quote
	for sc.i < len(sc.s) {
		// Fast path: skip ordinary characters eight at a time, then one by one.
		s, i := sc.s, sc.i
		for ; i+8 <= len(s); i += 8 {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if hasSpecial(x) {
				break
			}
		}
		for ; i < len(s); i++ {
			if c := s[i]; c <= '\\' && (c == '"' || c == '\\' || c < 0x20) {
				break
			}
		}
		sc.i = i
		if sc.i >= len(sc.s) {
			break
		}
		c := sc.s[sc.i]
		switch {
		case c == '"':
			sc.i++
			return nil
		case c == '\\':
			sc.i++
			sc.esc++
			if sc.i >= len(sc.s) {
				return sc.fail("in a string escape")
			}
			switch sc.s[sc.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				sc.i++
			case 'u':
				if sc.i+5 > len(sc.s) {
					sc.i = len(sc.s)
					return sc.fail("in a \\u escape")
				}
				for _, h := range []byte(sc.s[sc.i+1 : sc.i+5]) {
					if !isHex(h) {
						return sc.fail("in a \\u escape")
					}
				}
				sc.i += 5
			default:
				return sc.fail("in a string escape")
			}
		case c < 0x20:
			return sc.fail("in a string (control character)")
		default:
			sc.i++
		}
	}
	return sc.fail("in a string")
}

// plainJSONString reports whether s, put between quotes, is a JSON string
// that decodes to itself: no quote, no backslash, no control character.
func plainJSONString(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if hasSpecial(load64(s, i)) {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 {
			return false
		}
	}
	return true
}

// hasSpecial reports whether one of the eight bytes in x ends the fast path
// of a JSON string: '"', '\\' or a control character (SWAR bit tricks; exact
// as an "any byte" test).
func hasSpecial(x uint64) bool {
	return specialBits(x) != 0
}

// specialBits is hasSpecial as a mask: the high bit of each such byte may
// be set, and the lowest byte marked is exactly the first such byte (a
// borrow from a marked byte can mark bytes above it, never below), so that
// firstMarked(specialBits(x)) is its offset.
func specialBits(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := x^('"'*ones), x^('\\'*ones)
	return ((x-0x20*ones)&^x | (q-ones)&^q | (b-ones)&^b) & highs
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (sc *scanner) digits() int {
	n := 0
	for sc.i < len(sc.s) && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' {
		sc.i++
		n++
	}
	return n
}

func (sc *scanner) num() error {
	if sc.s[sc.i] == '-' {
		sc.i++
	}
	if sc.i < len(sc.s) && sc.s[sc.i] == '0' {
		sc.i++
	} else if sc.digits() == 0 {
		return sc.fail("in a number")
	}
	if sc.i < len(sc.s) && sc.s[sc.i] == '.' {
		sc.i++
		if sc.digits() == 0 {
			return sc.fail("in a number's fraction")
		}
	}
	if sc.i < len(sc.s) && (sc.s[sc.i] == 'e' || sc.s[sc.i] == 'E') {
		sc.i++
		if sc.i < len(sc.s) && (sc.s[sc.i] == '+' || sc.s[sc.i] == '-') {
			sc.i++
		}
		if sc.digits() == 0 {
			return sc.fail("in a number's exponent")
		}
	}
	return nil
}
