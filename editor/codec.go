package editor

import (
	stdjson "encoding/json"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.lsp.dev/jsonrpc2"
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

func (codec) options() json.Options {
	return json.JoinOptions(jsontext.EscapeForHTML(false), jsontext.AllowInvalidUTF8(true))
}

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
