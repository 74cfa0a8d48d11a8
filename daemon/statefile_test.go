package daemon

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// TestEncodeChangesIsMarshal: the change store's part encoded record by
// record is json.Marshal's encoding, byte for byte, whatever its lists
// hold (nil, empty, records with hunks and maps, text that looks like a
// member name) and whatever size it is told to expect.
func TestEncodeChangesIsMarshal(t *testing.T) {
	t.Parallel()
	content := `"changes":null,"undo":null <&>`
	rec := &changeRecord{
		Change:   Change{ID: "c1", Path: "a.txt", Kind: protocol.ChangeModify, Status: StatusApplied, Hunks: []Hunk{{ID: "h1", Header: "@@ -1 +1 @@", Status: StatusApplied, Match: "exact"}, {ID: "h2", Status: StatusConflict, Reason: "<not found>"}}},
		Src:      protocol.Change{Path: "a.txt", Diff: "--- a/a.txt\n"},
		Abs:      "/w/a.txt",
		Content:  &content,
		BaseHash: "abc",
		DiffRef:  &blobRef{Exists: true, Hash: "def", Pack: "pack-1", Off: 3, Len: 9},
	}
	undo := &undoRecord{Seq: 1, Group: 1, ChangeID: "c1", Action: "apply", Path: "/w/a.txt", Rel: "a.txt", Before: blobRef{Exists: true, Hash: "x"}, State: undoDone, Prev: map[string]string{"h1": StatusPending, "h2": StatusPending}, Hunks: []string{"h1"}}
	// Members whose text looks like the members spliced in by hand.
	odd := &changeRecord{
		Change: Change{ID: `c2,"hunks":null`, DialogID: `,"hunks":null,`, Path: `b,"hunks":null\`, Reason: `"hunks":null`, Hunks: []Hunk{}},
		Abs:    `/w/b,"hunks":null`,
	}
	oddUndo := &undoRecord{Seq: 2, ChangeID: `,"prevHunks":null`, Path: `/w/,"prevHunks":null\`, Rel: `"prevHunks":null`, At: `,"prevHunks":{}`,
		Before: blobRef{Hash: `,"prevHunks":null`}, Prev: map[string]string{}}
	noPrev := &undoRecord{Seq: 3, ChangeID: "c3"}
	for name, cs := range map[string]changesState{
		"new":       newPersisted(workspace{}).changesState,
		"empty":     {NextChange: 1, NextUndo: 1, Changes: []*changeRecord{}, Undo: []*undoRecord{}},
		"records":   {NextChange: 3, NextUndo: 2, Changes: []*changeRecord{rec, rec}, Undo: []*undoRecord{undo}},
		"nil entry": {NextChange: 2, Changes: []*changeRecord{nil}, Undo: nil},
		"odd":       {NextChange: 4, NextUndo: 4, Changes: []*changeRecord{odd, rec, {Change: Change{ID: "c3"}}}, Undo: []*undoRecord{oddUndo, noPrev, nil, undo}},
		"txn": {NextChange: 2, NextUndo: 2, Changes: []*changeRecord{rec}, Undo: []*undoRecord{undo},
			Txn: &txnRecord{Journal: diffapply.Journal{Root: `/w "changes":null`}, Undo: []int{1}}},
	} {
		want, err := json.Marshal(&cs)
		if err != nil {
			t.Fatal(err)
		}
		// A buffer of the last save is reused: what it held must not show.
		dirty := []byte(strings.Repeat(`{"changes":[x]}`, 10*len(want)))
		for _, hint := range []int{0, 10, len(want), 10 * len(want)} {
			for _, buf := range [][]byte{nil, dirty[:3], dirty} {
				got, err := encodeChanges(&cs, hint, buf)
				if err != nil {
					t.Fatalf("%s, hint %d: %v", name, hint, err)
				}
				if string(got) != string(want) {
					t.Errorf("%s, hint %d, buffer of %d: encoded\n%s\nwant json.Marshal's\n%s", name, hint, cap(buf), got, want)
				}
			}
		}
	}
}

// TestEncodeChangesFilledAtRandomIsMarshal: the change store's part,
// every member of every type in it filled at random (text that needs
// escaping or not: quotes, backslashes, HTML, control characters,
// non-ASCII, invalid UTF-8, line separators; numbers of any sign; nil,
// empty and full lists, maps and pointers), is encoded by hand as
// json.Marshal encodes it. A member added to any of these types is filled
// too, and fails the comparison until state_encode.go writes it; a member
// of a kind the filler does not know fails at once.
func TestEncodeChangesFilledAtRandomIsMarshal(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		var cs changesState
		fillRandom(t, rnd, reflect.ValueOf(&cs).Elem(), 0)
		want, err := json.Marshal(&cs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeChanges(&cs, n%3*len(want)/2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n%2 == 0 { // again, with what the first encoding kept
			if got, err = encodeChanges(&cs, 0, got); err != nil {
				t.Fatal(err)
			}
		}
		if string(got) != string(want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("state %d: encoded by hand, from byte %d:\n%.300s\njson.Marshal's:\n%.300s", n, i, got[i:], want[i:])
		}
	}
}

// TestHeadAndDialogsAreMarshal: the state file's head and its dialogs'
// part are json.Marshal's bytes, with and without dialogs, with a
// workspace path that needs escaping or not.
func TestHeadAndDialogsAreMarshal(t *testing.T) {
	t.Parallel()
	for _, ws := range []string{"/w/a", `/w/"<&>" é`, "/w/\xff"} {
		want, err := json.Marshal(struct {
			Version   int    `json:"version"`
			Workspace string `json:"workspace"`
		}{stateVersion, ws})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendHead(nil, ws); string(got) != string(want) {
			t.Errorf("head of %q: %s, want %s", ws, got, want)
		}
	}
	for _, ds := range []dialogsState{
		{NextTurn: 1},
		{NextTurn: 7, Dialogs: []*localDialog{}},
		{NextTurn: -2, CurrentDialog: `d1 "<&>"`},
		{NextTurn: 3, CurrentDialog: "d2", Dialogs: []*localDialog{{Dialog: Dialog{ID: "d2", Title: "t"}}, nil}},
	} {
		want, err := json.Marshal(&ds)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeDialogs(&ds)
		if err != nil || string(got) != string(want) {
			t.Errorf("dialogs %+v: %s, %v; want %s", ds, got, err, want)
		}
	}
}

// TestAppendJSONStringEveryByte: a string holding any one byte value,
// alone or between plain letters, is written as json.Marshal writes it
// (the bytes it escapes are told apart by two bit masks).
func TestAppendJSONStringEveryByte(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		for _, s := range []string{string([]byte{byte(c)}), "ab" + string([]byte{byte(c)}) + "cd"} {
			want, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if got := appendJSONString(nil, s); string(got) != string(want) {
				t.Errorf("%q: %s, want %s", s, got, want)
			}
		}
	}
}

// fillRandom sets every exported member of v, recursively, to random
// values of its kind (pointers, slices and maps nil, empty or set; below
// depth 4, nil).
func fillRandom(t *testing.T, rnd *rand.Rand, v reflect.Value, depth int) {
	t.Helper()
	texts := []string{"", "", "h12", "@@ -1,7 +1,7 @@ func main() {", `a "quoted" \ back`, "<&>", "tab\there\n", "\x00\x1f\x7f", "é ü 日本", "\xff\xfe bad", "\u2028\u2029", "}", `,"hunks":null`, "/w/a.txt"}
	switch v.Kind() {
	case reflect.String:
		v.SetString(texts[rnd.IntN(len(texts))])
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{0, 0, 1, -1, 42, -987654321, 1 << 40}[rnd.IntN(7)])
	case reflect.Uint32:
		v.SetUint([]uint64{0, 0o644, 0o755, 1 << 31}[rnd.IntN(4)])
	case reflect.Bool:
		v.SetBool(rnd.IntN(2) == 0)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRandom(t, rnd, v.Field(i), depth)
			}
		}
	case reflect.Pointer:
		if depth > 3 || rnd.IntN(3) == 0 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fillRandom(t, rnd, v.Elem(), depth+1)
	case reflect.Slice:
		k := rnd.IntN(5)
		if depth > 3 || k == 0 {
			return // nil
		}
		k-- // 0: empty, not nil
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, k*7)
			for i := range b {
				b[i] = byte(rnd.IntN(256))
			}
			v.SetBytes(b)
			return
		}
		s := reflect.MakeSlice(v.Type(), k, k)
		for i := range k {
			fillRandom(t, rnd, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		k := rnd.IntN(5)
		if depth > 3 || k == 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range k - 1 {
			key, val := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fillRandom(t, rnd, key, depth+1)
			fillRandom(t, rnd, val, depth+1)
			m.SetMapIndex(key, val)
		}
		v.Set(m)
	default:
		t.Fatalf("a member of kind %s (%s): teach state_encode.go and fillRandom to write it", v.Kind(), v.Type())
	}
}

// TestStateReadIsNotEncodedAgain: an engine started on a state file of
// this version does not encode the change store's part again (the file
// holds it: a state of many changes is tens of megabytes), and a save of
// the dialogs before any of the changes writes that part as the file
// held it; the changes read back after a restart are the same.
func TestStateReadIsNotEncodedAgain(t *testing.T) {
	t.Parallel()
	f, _, _ := patchFixture(t, undoSmall, nil)
	views := f.e.list(ChangeFilter{})
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.e.StateDir(), "state.json")
	before := readMembers(t, path)
	f.e = f.open()
	f.e.cs.file.mu.Lock()
	held := f.e.cs.file.changes
	f.e.cs.file.mu.Unlock()
	if held != nil {
		t.Errorf("the engine encoded the changes it read again at start (%d bytes)", len(held))
	}
	saveDialogsKeepsChanges(t, f, path, before, views, "version", "workspace")
	// The undo still finds its journal.
	if _, err := f.e.Undo(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
}

func readMembers(t *testing.T, path string) map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSaveReusesTheBufferTheFileHolds: a save of the changes encodes
// into the buffer of the save before it once the file holds that one (an
// apply saves twice), and the file holds what json.Marshal gives after
// each save, after a save of the dialogs made while the changes' encoding
// is taken, and after a restart.
func TestSaveReusesTheBufferTheFileHolds(t *testing.T) {
	t.Parallel()
	f, _, _ := patchFixture(t, undoSmall, nil)
	path := filepath.Join(f.e.StateDir(), "state.json")
	cs := f.e.cs
	check := func(when string) {
		t.Helper()
		cs.mu.Lock()
		want, err := json.Marshal(&cs.st)
		cs.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(want, &m); err != nil {
			t.Fatal(err)
		}
		got := readMembers(t, path)
		for k, v := range m {
			if string(got[k]) != string(v) {
				t.Errorf("%s: member %q of the state file:\n%.200s\nwant\n%.200s", when, k, got[k], v)
			}
		}
	}
	save := func() *byte {
		t.Helper()
		cs.mu.Lock()
		cs.st.NextUndo++
		err := cs.saveLocked()
		cs.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		cs.file.mu.Lock()
		defer cs.file.mu.Unlock()
		if len(cs.file.changes) == 0 {
			t.Fatal("the changes' encoding was not kept")
		}
		return &cs.file.changes[:1][0]
	}
	first := save()
	check("first save")
	if second := save(); second != first {
		t.Error("the second save did not encode into the buffer of the first, which the file held")
	}
	check("second save")
	// Taken as a save would take it: a save of the dialogs meanwhile
	// writes the changes as the file holds them.
	cs.file.mu.Lock()
	cs.file.spare, cs.file.changes = cs.file.changes, nil
	cs.file.mu.Unlock()
	saveDialogs(t, f)
	check("a save of the dialogs")
	save()
	check("third save")
	views := f.e.list(ChangeFilter{})
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	if d := cmp.Diff(views, f.e.list(ChangeFilter{})); d != "" {
		t.Errorf("the changes after a restart (-before +after):\n%s", d)
	}
}

// TestWrittenChangesAreNotKept: once the file holds a large change part
// (keepEncodedBelow; 1 here), the state file lets go of its encoding, and
// a save of the dialogs after it writes the changes as the last save of
// the change store did; after a restart the changes are the same.
func TestWrittenChangesAreNotKept(t *testing.T) {
	t.Parallel()
	f, _, _ := patchFixture(t, undoSmall, nil)
	f.e.cs.file.mu.Lock()
	f.e.cs.file.keepBelow = 1
	f.e.cs.file.mu.Unlock()
	if _, err := f.e.Undo(context.Background(), ""); err != nil { // a save of the changes
		t.Fatal(err)
	}
	path := filepath.Join(f.e.StateDir(), "state.json")
	before := readMembers(t, path)
	f.e.cs.file.mu.Lock()
	held := f.e.cs.file.changes
	f.e.cs.file.mu.Unlock()
	if held != nil {
		t.Errorf("the state file kept the changes it wrote (%d bytes)", len(held))
	}
	views := f.e.list(ChangeFilter{})
	saveDialogsKeepsChanges(t, f, path, before, views)
}

// saveDialogs saves the dialogs alone, with something changed in them (the
// next turn's number), as a turn's end does.
func saveDialogs(t *testing.T, f *fixture) {
	t.Helper()
	f.e.dr.mu.Lock()
	f.e.dr.st.NextTurn += 5
	err := f.e.dr.saveLocked()
	f.e.dr.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
}

// saveDialogsKeepsChanges saves the dialogs alone (a turn counter moved)
// and checks that the state file at path then holds the change store's
// members (and the members named in more) as before held them, and that
// after a restart the engine lists views again.
func saveDialogsKeepsChanges(t *testing.T, f *fixture, path string, before map[string]json.RawMessage, views []Change, more ...string) {
	t.Helper()
	saveDialogs(t, f)
	after := readMembers(t, path)
	if string(after["nextTurn"]) == string(before["nextTurn"]) {
		t.Fatalf("the dialogs' save did not reach the file (nextTurn %s)", after["nextTurn"])
	}
	for _, k := range append([]string{"nextChange", "nextUndo", "changes", "undo"}, more...) {
		if string(after[k]) != string(before[k]) {
			t.Errorf("member %q of the state file changed with a save of the dialogs:\n%.200s\nwas\n%.200s", k, after[k], before[k])
		}
	}
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	if d := cmp.Diff(views, f.e.list(ChangeFilter{})); d != "" {
		t.Errorf("the changes after a restart (-before +after):\n%s", d)
	}
}
