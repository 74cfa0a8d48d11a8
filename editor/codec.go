package editor

import (
	stdjson "encoding/json"
	"strconv"
	"sync"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.lsp.dev/jsonrpc2"

	"github.com/smith-dev/smith/protocol"
)

// codec is the payload codec of smith's connections: jsonrpc2's default
// (encoding/json/v2, no HTML escaping) except that invalid UTF-8 is
// replaced by U+FFFD instead of failing. v2 refuses invalid UTF-8 in both
// directions, so a file that is not UTF-8 (a Latin-1 source, a stray byte)
// would make a preview or a workspace/applyEdit fail to encode, and an
// editor that sends such bytes would see its didOpen dropped. LSP text is
// UTF-8, so the replacement is the honest rendering; what smith writes to
// disk never goes through this codec.
type codec struct{}

// codecOptions is built once (JoinOptions allocates) and never changed. It
// is built on first use, not at program start: every smith command links
// this package, and the short ones (smith version, apply, changes) never
// encode for an editor (docs/benchmarks.md, "Start-up (target 4)").
var codecOptions = sync.OnceValue(func() json.Options {
	return json.JoinOptions(jsontext.EscapeForHTML(false), jsontext.AllowInvalidUTF8(true))
})

func (codec) options() json.Options { return codecOptions() }

// Marshal passes raw messages through unchanged, as the Codec contract asks.
func (c codec) Marshal(v any) ([]byte, error) {
	switch v.(type) {
	case jsonrpc2.RawMessage, stdjson.RawMessage:
		return jsonrpc2.DefaultCodec.Marshal(v)
	}
	return json.Marshal(v, c.options())
}

// Unmarshal copies into raw messages verbatim, as the Codec contract asks.
func (c codec) Unmarshal(data []byte, v any) error {
	switch v.(type) {
	case *jsonrpc2.RawMessage, *stdjson.RawMessage:
		return jsonrpc2.DefaultCodec.Unmarshal(data, v)
	}
	return json.Unmarshal(data, v, c.options())
}

// eventParams encodes the params of a smith/event that carries a text or
// reasoning delta — nearly every notification of a turn — into buf, and
// reports whether it could. Other events (and any delta with a payload
// pointer or raw upstream bytes) return false and go through the codec.
//
// Why not the codec: its reflection over EventParams and the event's
// twelve optional members was most of smith's CPU per event when relaying
// a fast stream (docs/benchmarks.md, "smith serve"). The strings are
// quoted by jsontext.AppendQuote, which makes exactly the codec's choices
// (no HTML escaping, invalid UTF-8 as U+FFFD); TestEventParamsMatchCodec
// holds the two byte for byte. buf is reused by the caller: one turn's
// emit runs on one goroutine, and Notify has copied the bytes out before
// it returns.
func eventParams(buf []byte, p *EventParams) ([]byte, bool) {
	ev := &p.Event
	if ev.Type != protocol.KindText && ev.Type != protocol.KindReasoning ||
		ev.Segment != nil || ev.ToolCall != nil || ev.ToolResult != nil || ev.Change != nil ||
		ev.Citation != nil || ev.Notice != nil || ev.Error != nil || ev.TurnEnd != nil ||
		ev.Violation != nil || len(ev.Raw) != 0 {
		return buf, false
	}
	b := append(buf[:0], `{"dialogId":`...)
	b, _ = jsontext.AppendQuote(b, p.DialogID)
	b = append(b, `,"turnId":`...)
	b, _ = jsontext.AppendQuote(b, p.TurnID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, p.Seq, 10)
	b = append(b, `,"event":{"type":`...)
	b, _ = jsontext.AppendQuote(b, string(ev.Type))
	if ev.DialogID != "" {
		b = append(b, `,"dialogId":`...)
		b, _ = jsontext.AppendQuote(b, ev.DialogID)
	}
	if ev.TurnID != "" {
		b = append(b, `,"turnId":`...)
		b, _ = jsontext.AppendQuote(b, ev.TurnID)
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	if ev.Text != "" {
		b = append(b, `,"text":`...)
		b, _ = jsontext.AppendQuote(b, ev.Text)
	}
	return append(b, "}}"...), true
}
