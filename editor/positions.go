package editor

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// LSP positions count lines and code units of the negotiated encoding;
// smith's buffers are bytes. These helpers convert between the two.
//
// Line terminators are "\n", "\r\n" and "\r", as LSP says. A character
// offset past the end of its line means the end of the line, and a line
// past the end of the text means the end of the text (both as the
// specification asks clients and servers to tolerate). An offset that
// falls inside a character (the middle of a UTF-8 sequence or of a UTF-16
// surrogate pair) is moved back to the start of that character.

// lineStart returns the byte offset of the start of line (0-based) and
// whether the line exists; for a missing line it returns len(text).
func lineStart(text []byte, line uint32) (int, bool) {
	off := 0
	for l := uint32(0); l < line; l++ {
		n := nextLine(text, off)
		if n < 0 {
			return len(text), false
		}
		off = n
	}
	return off, true
}

// nextLine returns the offset just after the line terminator that ends the
// line starting at off, or -1 when that line is the last one. It searches
// with bytes.IndexByte (vectorized) rather than byte by byte: a didChange
// in the middle of a large buffer first has to find its line.
func nextLine(text []byte, off int) int {
	rest := text[off:]
	nl := bytes.IndexByte(rest, '\n')
	span := rest
	if nl >= 0 {
		span = rest[:nl]
	}
	if cr := bytes.IndexByte(span, '\r'); cr >= 0 {
		if cr+1 < len(rest) && rest[cr+1] == '\n' {
			return off + cr + 2
		}
		return off + cr + 1
	}
	if nl < 0 {
		return -1
	}
	return off + nl + 1
}

// lineEnd returns the offset of the line terminator (or end of text) of
// the line starting at off.
func lineEnd(text []byte, off int) int {
	rest := text[off:]
	end := len(rest)
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		end = nl
	}
	if cr := bytes.IndexByte(rest[:end], '\r'); cr >= 0 {
		end = cr
	}
	return off + end
}

// units is the width of r in code units of enc.
func units(r rune, size int, enc PositionEncoding) uint32 {
	switch enc {
	case EncodingUTF8:
		return uint32(size)
	case EncodingUTF32:
		return 1
	}
	if r >= 0x10000 && r != utf8.RuneError {
		return 2
	}
	return 1
}

// offsetOf converts pos to a byte offset in text.
func offsetOf(text []byte, pos Position, enc PositionEncoding) int {
	start, ok := lineStart(text, pos.Line)
	if !ok {
		return len(text)
	}
	end := lineEnd(text, start)
	var col uint32
	for i := start; i < end; {
		if col >= pos.Character {
			return i
		}
		r, size := utf8.DecodeRune(text[i:end])
		w := units(r, size, enc)
		if col+w > pos.Character {
			return i // inside a character: its start
		}
		col += w
		i += size
	}
	return end
}

// positionOf converts a byte offset in text to a position.
func positionOf(text []byte, off int, enc PositionEncoding) Position {
	if off > len(text) {
		off = len(text)
	}
	var line uint32
	start := 0
	for {
		n := nextLine(text, start)
		if n < 0 || n > off {
			break
		}
		line++
		start = n
	}
	var col uint32
	for i := start; i < off; {
		r, size := utf8.DecodeRune(text[i:off])
		col += units(r, size, enc)
		i += size
	}
	return Position{Line: line, Character: col}
}

// rangeOffsets converts r to byte offsets, checking their order.
func rangeOffsets(text []byte, r Range, enc PositionEncoding) (start, end int, err error) {
	start = offsetOf(text, r.Start, enc)
	end = offsetOf(text, r.End, enc)
	if end < start {
		return 0, 0, fmt.Errorf("range %d:%d-%d:%d ends before it starts", r.Start.Line, r.Start.Character, r.End.Line, r.End.Character)
	}
	return start, end, nil
}

// minimalEdit returns the one TextEdit that turns old into new: the range
// of old between their common prefix and suffix, replaced by the middle of
// new. The cut points are moved to character boundaries and never split a
// "\r\n" pair, so the range is expressible in any encoding. nil means the
// texts are equal.
func minimalEdit(old, new []byte, enc PositionEncoding) *TextEdit {
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	if p == len(old) && p == len(new) {
		return nil
	}
	for p > 0 && (!boundary(old, p) || !boundary(new, p)) {
		p--
	}
	s := 0
	for s < len(old)-p && s < len(new)-p && old[len(old)-1-s] == new[len(new)-1-s] {
		s++
	}
	for s > 0 && (!boundary(old, len(old)-s) || !boundary(new, len(new)-s)) {
		s--
	}
	return &TextEdit{
		Range: Range{
			Start: positionOf(old, p, enc),
			End:   positionOf(old, len(old)-s, enc),
		},
		NewText: string(new[p : len(new)-s]),
	}
}

// boundary reports whether a cut at off starts a character and does not
// split "\r\n".
func boundary(b []byte, off int) bool {
	if off <= 0 || off >= len(b) {
		return true
	}
	if !utf8.RuneStart(b[off]) {
		return false
	}
	return !(b[off] == '\n' && b[off-1] == '\r')
}
