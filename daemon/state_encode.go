package daemon

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// The change store's part of state.json is written by hand, byte for
// byte as json.Marshal writes it: it is rewritten whole at every save (an
// apply saves twice), a large patch's part holds thousands of hunks, and
// encoding/json's reflection was most of a save's CPU, and building its
// encoders for these types most of a one-file apply's encoding.
// TestEncodeChangesIsMarshal fills every member of every type below, at
// random, and compares with json.Marshal: a member added to one of these
// types fails it until it is written here.

// encodeChanges is json.Marshal(cs), into buf (whose bytes it
// overwrites) when buf can hold about hint bytes (the last encoding's
// size) or what sizeOfChanges expects, else into a buffer of that size:
// json.Marshal of the whole part grows its buffer by doubling and then
// copies it, which for a state of many hunks (a patch of 25 files of
// 43 500 lines records 108 750, 20 MB) is three times the encoding, held
// at once at every save and at every start.
func encodeChanges(cs *changesState, hint int, buf []byte) ([]byte, error) {
	out := buf[:0]
	if size := max(hint+hint/8, sizeOfChanges(cs)) + 64; cap(buf) < size {
		out = make([]byte, 0, size)
	}
	return appendChangesState(out, cs), nil
}

// appendHead appends the state file's first members as an object:
// {"version":stateVersion,"workspace":ws}.
func appendHead(b []byte, ws string) []byte {
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, stateVersion, 10)
	b = append(b, `,"workspace":`...)
	b = appendJSONString(b, ws)
	return append(b, '}')
}

// encodeDialogs is json.Marshal(ds), by hand when there is no dialog to
// write (every smith apply, every workspace whose upstream keeps its own
// dialogs): encoding/json builds its encoders for every type a dialog
// holds before it writes an empty list.
func encodeDialogs(ds *dialogsState) ([]byte, error) {
	if len(ds.Dialogs) > 0 {
		return json.Marshal(ds)
	}
	b := append([]byte(`{"nextTurn":`), strconv.Itoa(ds.NextTurn)...)
	if ds.CurrentDialog != "" {
		b = append(b, `,"currentDialog":`...)
		b = appendJSONString(b, ds.CurrentDialog)
	}
	if ds.Dialogs == nil {
		return append(b, `,"dialogs":null}`...), nil
	}
	return append(b, `,"dialogs":[]}`...), nil
}

func appendChangesState(b []byte, cs *changesState) []byte {
	b = append(b, `{"nextChange":`...)
	b = strconv.AppendInt(b, int64(cs.NextChange), 10)
	b = append(b, `,"nextUndo":`...)
	b = strconv.AppendInt(b, int64(cs.NextUndo), 10)
	b = append(b, `,"changes":`...)
	b = appendList(b, cs.Changes, appendChangeRecord)
	b = append(b, `,"undo":`...)
	b = appendList(b, cs.Undo, appendUndoRecord)
	if cs.Txn != nil {
		b = append(b, `,"txn":`...)
		b = appendTxn(b, cs.Txn)
	}
	return append(b, '}')
}

// appendList appends list as a JSON array (null when nil), each element
// by elem.
func appendList[T any](b []byte, list []T, elem func([]byte, T) []byte) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(b, v)
	}
	return append(b, ']')
}

func appendChangeRecord(b []byte, c *changeRecord) []byte {
	if c == nil {
		return append(b, "null"...)
	}
	// Change's members, in place of the embedded struct; its Diff is
	// hidden by the record's own (json's rule: the shallower name wins),
	// which comes at its own place below.
	b = append(b, `{"id":`...)
	b = appendJSONString(b, c.ID)
	b = append(b, `,"dialogId":`...)
	b = appendJSONString(b, c.DialogID)
	b = append(b, `,"turnId":`...)
	b = appendJSONString(b, c.TurnID)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, c.Path)
	if c.OldPath != "" {
		b = append(b, `,"oldPath":`...)
		b = appendJSONString(b, c.OldPath)
	}
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, string(c.Kind))
	b = append(b, `,"status":`...)
	b = appendJSONString(b, c.Status)
	if c.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, c.Reason)
	}
	b = append(b, `,"hunks":`...)
	if c.Hunks == nil {
		b = append(b, "null"...)
	} else {
		b = appendHunks(b, c.Hunks)
	}
	if len(c.Restored) > 0 {
		b = append(b, `,"restored":[`...)
		for i, r := range c.Restored {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"changeId":`...)
			b = appendJSONString(b, r.ChangeID)
			b = append(b, `,"path":`...)
			b = appendJSONString(b, r.Path)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"src":`...)
	b = appendProtocolChange(b, &c.Src)
	b = append(b, `,"abs":`...)
	b = appendJSONString(b, c.Abs)
	if c.OldAbs != "" {
		b = append(b, `,"oldAbs":`...)
		b = appendJSONString(b, c.OldAbs)
	}
	b = append(b, `,"content":`...)
	if c.Content == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *c.Content)
	}
	b = append(b, `,"diff":`...)
	b = appendJSONString(b, c.Diff)
	b = append(b, `,"baseHash":`...)
	b = appendJSONString(b, c.BaseHash)
	if c.DiffRef != nil {
		b = append(b, `,"diffRef":`...)
		b = appendBlobRef(b, c.DiffRef)
	}
	return append(b, '}')
}

func appendProtocolChange(b []byte, c *protocol.Change) []byte {
	b = append(b, `{"path":`...)
	b = appendJSONString(b, c.Path)
	if c.OldPath != "" {
		b = append(b, `,"oldPath":`...)
		b = appendJSONString(b, c.OldPath)
	}
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, string(c.Kind))
	if c.Diff != "" {
		b = append(b, `,"diff":`...)
		b = appendJSONString(b, c.Diff)
	}
	if c.Content != "" {
		b = append(b, `,"content":`...)
		b = appendJSONString(b, c.Content)
	}
	if c.HasContent {
		b = append(b, `,"hasContent":true`...)
	}
	if c.Mode != 0 {
		b = append(b, `,"mode":`...)
		b = strconv.AppendUint(b, uint64(c.Mode), 10)
	}
	if c.AppliedUpstream {
		b = append(b, `,"appliedUpstream":true`...)
	}
	if c.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, c.Reason)
	}
	if c.LineStart != nil {
		b = append(b, `,"lineStart":`...)
		b = strconv.AppendInt(b, int64(*c.LineStart), 10)
	}
	if c.LineEnd != nil {
		b = append(b, `,"lineEnd":`...)
		b = strconv.AppendInt(b, int64(*c.LineEnd), 10)
	}
	if c.Checkpoint != "" {
		b = append(b, `,"checkpoint":`...)
		b = appendJSONString(b, c.Checkpoint)
	}
	if c.Source != "" {
		b = append(b, `,"source":`...)
		b = appendJSONString(b, c.Source)
	}
	return append(b, '}')
}

func appendBlobRef(b []byte, r *blobRef) []byte {
	b = append(b, `{"exists":`...)
	b = strconv.AppendBool(b, r.Exists)
	if r.Hash != "" {
		b = append(b, `,"hash":`...)
		b = appendJSONString(b, r.Hash)
	}
	if r.Pack != "" {
		b = append(b, `,"pack":`...)
		b = appendJSONString(b, r.Pack)
	}
	if r.Off != 0 {
		b = append(b, `,"off":`...)
		b = strconv.AppendInt(b, r.Off, 10)
	}
	if r.Len != 0 {
		b = append(b, `,"len":`...)
		b = strconv.AppendInt(b, r.Len, 10)
	}
	if len(r.Inline) > 0 {
		b = append(b, `,"inline":"`...)
		b = base64.StdEncoding.AppendEncode(b, r.Inline)
		b = append(b, '"')
	}
	return append(b, '}')
}

func appendUndoRecord(b []byte, u *undoRecord) []byte {
	if u == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, int64(u.Seq), 10)
	if u.Group != 0 {
		b = append(b, `,"group":`...)
		b = strconv.AppendInt(b, int64(u.Group), 10)
	}
	b = append(b, `,"changeId":`...)
	b = appendJSONString(b, u.ChangeID)
	b = append(b, `,"action":`...)
	b = appendJSONString(b, u.Action)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, u.Path)
	b = append(b, `,"rel":`...)
	b = appendJSONString(b, u.Rel)
	b = append(b, `,"via":`...)
	b = appendJSONString(b, u.Via)
	b = append(b, `,"at":`...)
	b = appendJSONString(b, u.At)
	b = append(b, `,"before":`...)
	b = appendBlobRef(b, &u.Before)
	b = append(b, `,"after":`...)
	b = appendBlobRef(b, &u.After)
	b = append(b, `,"state":`...)
	b = appendJSONString(b, u.State)
	b = append(b, `,"prevHunks":`...)
	if u.Prev == nil {
		b = append(b, "null"...)
	} else {
		if u.prevJSON == nil {
			u.prevJSON = appendStringMap(nil, u.Prev)
		}
		b = append(b, u.prevJSON...)
	}
	if len(u.Hunks) > 0 {
		b = append(b, `,"hunks":`...)
		b = appendList(b, u.Hunks, appendJSONString)
	}
	b = append(b, `,"prevStatus":`...)
	b = appendJSONString(b, u.PrevStat)
	if u.Mode != 0 {
		b = append(b, `,"mode":`...)
		b = strconv.AppendUint(b, uint64(u.Mode), 10)
	}
	return append(b, '}')
}

func appendTxn(b []byte, t *txnRecord) []byte {
	b = append(b, `{"root":`...)
	b = appendJSONString(b, t.Root)
	b = append(b, `,"entries":`...)
	b = appendList(b, t.Entries, appendJournalEntry)
	b = append(b, `,"undo":`...)
	b = appendList(b, t.Undo, func(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) })
	if t.Action != "" {
		b = append(b, `,"action":`...)
		b = appendJSONString(b, t.Action)
	}
	return append(b, '}')
}

func appendJournalEntry(b []byte, e diffapply.JournalEntry) []byte {
	b = append(b, `{"path":`...)
	b = appendJSONString(b, e.Path)
	if e.Temp != "" {
		b = append(b, `,"temp":`...)
		b = appendJSONString(b, e.Temp)
	}
	if e.Backup != "" {
		b = append(b, `,"backup":`...)
		b = appendJSONString(b, e.Backup)
	}
	b = append(b, `,"existed":`...)
	b = strconv.AppendBool(b, e.Existed)
	b = append(b, `,"mode":`...)
	b = strconv.AppendUint(b, uint64(e.Mode), 10)
	if len(e.Dirs) > 0 {
		b = append(b, `,"dirs":`...)
		b = appendList(b, e.Dirs, appendJSONString)
	}
	b = append(b, `,"before":`...)
	b = appendJSONString(b, e.Before)
	b = append(b, `,"after":`...)
	b = appendJSONString(b, e.After)
	return append(b, '}')
}

// appendHunks appends hs as json.Marshal encodes a []Hunk (not nil).
func appendHunks(b []byte, hs []Hunk) []byte {
	b = append(b, '[')
	for i := range hs {
		if i > 0 {
			b = append(b, ',')
		}
		h := &hs[i]
		b = append(b, `{"id":`...)
		b = appendJSONString(b, h.ID)
		b = append(b, `,"header":`...)
		b = appendJSONString(b, h.Header)
		b = append(b, `,"status":`...)
		b = appendJSONString(b, h.Status)
		b = append(b, `,"match":`...)
		b = appendJSONString(b, h.Match)
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, int64(h.Offset), 10)
		b = append(b, `,"oldStart":`...)
		b = strconv.AppendInt(b, int64(h.OldStart), 10)
		b = append(b, `,"oldLines":`...)
		b = strconv.AppendInt(b, int64(h.OldLines), 10)
		b = append(b, `,"newStart":`...)
		b = strconv.AppendInt(b, int64(h.NewStart), 10)
		b = append(b, `,"newLines":`...)
		b = strconv.AppendInt(b, int64(h.NewLines), 10)
		b = append(b, `,"text":`...)
		b = appendJSONString(b, h.Text)
		if h.Reason != "" {
			b = append(b, `,"reason":`...)
			b = appendJSONString(b, h.Reason)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendStringMap appends m as json.Marshal encodes a map[string]string
// (not nil): its keys in order.
func appendStringMap(b []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, m[k])
	}
	return append(b, '}')
}

// appendJSONString appends s as json.Marshal encodes a string. A string
// of printable ASCII that needs no escape (hunk ids, statuses, headers,
// hashes, most paths) is copied as it is; any other is encoded by
// encoding/json itself.
func appendJSONString(b []byte, s string) []byte {
	// The bytes json escapes, one bit each: control characters, '"', '&',
	// '<' and '>' below 64; '\\' and DEL from 64; all from 128 (UTF-8).
	const lo = 1<<0x20 - 1 | 1<<'"' | 1<<'&' | 1<<'<' | 1<<'>'
	const hi = 1<<('\\'-64) | 1<<(0x7f-64)
	for i := 0; i < len(s); i++ {
		c := s[i]
		var esc bool
		if c < 64 {
			esc = uint64(lo)>>c&1 != 0
		} else {
			esc = c >= 128 || uint64(hi)>>(c-64)&1 != 0
		}
		if esc {
			q, err := json.Marshal(s)
			if err != nil { // a string always encodes
				panic(err)
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
