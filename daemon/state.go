package daemon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

// stateVersion is the layout version of state.json; a newer file is refused
// rather than half-understood. Version 2 keeps large diffs in the blob
// store (changeRecord.DiffRef), which version 1 would read as no diff.
// Version 3 keeps small texts before a write in the undo record itself
// (blobRef.Inline) and the journal of a disk commit under way (Txn),
// which version 2 would read as blobs it cannot find and no commit.
const stateVersion = 3

// inlineBelow is the size up to which the text a write replaces is kept
// in its undo record (blobRef.Inline), not in a pack: the record is
// written and synced anyway, and a pack costs a file, its fsync and its
// folder's. inlineTotal bounds all such texts of the state file, which is
// rewritten on every save: past it they move to a pack together, once
// (undoStage).
const (
	inlineBelow = 16 << 10
	inlineTotal = 64 << 10
)

// largeDiff is the size from which a change's diff is kept as a blob, not
// in state.json: the state file is rewritten on every save, a blob once.
// Below it the copy costs less than a file of its own and its fsync.
const largeDiff = 4 << 10

// stateDirFor returns the per-workspace state folder under root:
// root/<first 16 hex digits of sha256(resolved workspace path)>. Keying by the
// resolved path makes two spellings of one workspace share their journal.
func stateDirFor(root string, ws workspace) (string, error) {
	if root == "" {
		if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
			root = filepath.Join(x, "smith")
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("state directory: %w (set Config.StateDir or XDG_STATE_HOME)", err)
			}
			root = filepath.Join(home, ".local", "state", "smith")
		}
	}
	sum := sha256.Sum256([]byte(ws.resolved))
	return filepath.Join(root, hex.EncodeToString(sum[:8])), nil
}

// persisted is the whole of state.json: the change store's part (the
// change records and what undo needs) and the dialog registry's (the
// local dialog index and the turn counter). Each part is encoded under its
// own lock and the file is written from the latest encoding of both
// (stateFile), so neither part waits for the other's lock to save. It is
// small because file bytes live in content-addressed blobs beside it.
type persisted struct {
	Version   int    `json:"version"`
	Workspace string `json:"workspace"`
	changesState
	dialogsState

	// read: decoded from a state file of this version, which then holds
	// the changes part as it would be encoded (newStateFile).
	read bool
	// fresh: there was no state file (the state folder is new, or was
	// never saved in): the first write-ahead save syncs the folder that
	// holds the state folder too, so that its entry is durable.
	fresh bool
}

// changesState is the change store's part of state.json.
type changesState struct {
	NextChange int             `json:"nextChange"`
	NextUndo   int             `json:"nextUndo"`
	Changes    []*changeRecord `json:"changes"`
	Undo       []*undoRecord   `json:"undo"`
	// Txn is the disk commit of an apply or an undo under way: saved with
	// the apply's undo records (or before the undo's first rename), before
	// the first temp file (the commit's write-ahead record:
	// diffapply.CommitLogged), cleared with their settling. One found at
	// start was cut short; recovery settles it (settleTxn).
	Txn *txnRecord `json:"txn,omitempty"`
}

// txnRecord is a disk commit's journal with, for each of its entries,
// the Seq of the undo record that holds the bytes before (to roll back).
//
// Action is txnUndo for the commit of an Undo, whose entries take the
// records back: their texts before are what the commit writes, and the
// bytes it replaces (what smith wrote) are not journalled, so it is
// settled forward only. "" is an apply's (and every record of a version 3
// state file, whose undos kept diffapply's own journal).
type txnRecord struct {
	diffapply.Journal
	Undo   []int  `json:"undo"`
	Action string `json:"action,omitempty"`
}

// txnUndo is txnRecord.Action for an Undo's commit.
const txnUndo = "undo"

// dialogsState is the dialog registry's part of state.json.
type dialogsState struct {
	NextTurn      int            `json:"nextTurn"`
	CurrentDialog string         `json:"currentDialog,omitempty"`
	Dialogs       []*localDialog `json:"dialogs"` // local dialogs (upstreams without a dialog API)
}

func newPersisted(ws workspace) *persisted {
	return &persisted{
		Version: stateVersion, Workspace: ws.root,
		changesState: changesState{NextChange: 1, NextUndo: 1},
		dialogsState: dialogsState{NextTurn: 1},
	}
}

// stateFile writes state.json from the parts' latest encodings. Its lock
// is the innermost of the engine: a part calls write while holding its own
// lock (so that its saves reach the file in the order it made them), and
// nothing is locked while holding stateFile.mu.
type stateFile struct {
	store store

	mu      sync.Mutex
	head    []byte // {"version":...,"workspace":...}
	changes []byte // the change store's last encoded changesState; nil: as the file holds it (newStateFile, keepEncodedBelow)
	dialogs []byte // the dialog registry's
	// spare is the buffer of the changes part before the last save,
	// written and no longer used: the next save encodes into it. An apply
	// saves twice (its write-ahead record, then that it happened), each
	// time the whole part; a fresh buffer each time is fresh memory, which
	// the kernel faults in and clears page by page.
	spare []byte
	// held: the file holds changes (its last write succeeded). The save
	// after it may then encode into changes' own buffer, which it takes
	// (changes becomes nil: as the file holds it), when the spare is
	// smaller: the apply's second save then reuses its first one's.
	held bool
	// keepBelow: changes of this size or more are not kept once written
	// (keepEncodedBelow; tests vary it).
	keepBelow int
}

func newStateFile(s store, p *persisted) (*stateFile, error) {
	head := appendHead(nil, p.Workspace)
	f := &stateFile{store: s, head: head, keepBelow: keepEncodedBelow}
	var err error
	// A state read from a file of this version is not encoded again until
	// the change store saves it: the file holds that encoding already
	// (changesFromFile), and a state of many changes is tens of megabytes.
	if !p.read {
		if f.changes, err = encodeChanges(&p.changesState, 0, nil); err != nil {
			return nil, fmt.Errorf("encode state: %w", err)
		}
	}
	if f.dialogs, err = encodeDialogs(&p.dialogsState); err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return f, nil
}

// saveChanges encodes cs (the caller holds the change store's lock) and
// rewrites the file.
func (f *stateFile) saveChanges(cs *changesState) error {
	f.mu.Lock()
	hint := len(f.changes)
	if f.changes == nil { // as the file holds it: about its size
		if fi, err := os.Stat(f.store.statePath()); err == nil {
			hint = int(fi.Size())
		}
	}
	buf := f.spare
	f.spare = nil
	if f.held && cap(f.changes) > cap(buf) {
		// The file holds it: a save of the dialogs meanwhile reads it
		// from there (writeLocked), as a failed encoding leaves it.
		f.spare, buf, f.changes = buf, f.changes, nil
	}
	f.mu.Unlock()
	b, err := encodeChanges(cs, hint, buf)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if old := f.changes; cap(old) < f.keepBelow && cap(old) > cap(f.spare) {
		f.spare = old // written: no one reads it again
	}
	f.changes, f.held = b, false
	return f.writeLocked()
}

// sizeOfChanges is about the size of cs's records encoded, for the first
// save of records that the last encoding did not hold (an apply records
// every file of its patch, then saves them all): a buffer grown by append
// from the last size would be copied again and again (from 256 KiB, a
// quarter more each time), all in fresh memory.
func sizeOfChanges(cs *changesState) int {
	n := 0
	for _, c := range cs.Changes {
		if c == nil {
			continue
		}
		n += 512 + len(c.Diff) + len(c.Abs) + len(c.Path)
		if c.Content != nil {
			n += len(*c.Content)
		}
		for _, h := range c.Hunks {
			n += 160 + len(h.ID) + len(h.Header) + len(h.Text) + len(h.Reason)
		}
	}
	for _, r := range cs.Undo {
		if r == nil {
			continue
		}
		n += 512 + 2*len(r.Path) + 24*len(r.Prev) + 8*len(r.Hunks) + (len(r.Before.Inline)+len(r.After.Inline))*4/3
	}
	return n
}

// changesFromFile is the change store's part of the state file at path
// as an object of its own, its members as the file holds them, in the
// order of changesState: what encodeChanges gave for the state the file
// was read as, when no save has rewritten it since.
func changesFromFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return nil, fmt.Errorf("%w: %s is corrupt (%v)", ErrStateCorrupt, path, err)
	}
	out := []byte{'{'}
	t := reflect.TypeFor[changesState]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		raw, ok := members[name]
		if !ok || name == "" || name == "-" {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, name)
		out = append(out, ':')
		out = append(out, raw...)
	}
	return append(out, '}'), nil
}

// saveDialogs encodes ds (the caller holds the dialog registry's lock) and
// rewrites the file.
func (f *stateFile) saveDialogs(ds *dialogsState) error {
	b, err := encodeDialogs(ds)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dialogs = b
	return f.writeLocked()
}

// writeLocked joins the three JSON objects' members into one object, the
// layout persisted reads back, writing the parts one after the other
// rather than joining them in memory first (a state of many changes is
// tens of megabytes, already held once as f.changes). Not indented: the
// state is rewritten after every mutation, and indenting makes a second
// copy of it.
func (f *stateFile) writeLocked() error {
	if f.changes == nil {
		b, err := changesFromFile(f.store.statePath())
		if err != nil {
			return err
		}
		f.changes = b
	}
	parts := [][]byte{f.head[:len(f.head)-1]}
	for _, part := range [][]byte{f.changes, f.dialogs} {
		if inner := part[1 : len(part)-1]; len(inner) > 0 {
			parts = append(parts, []byte{','}, inner)
		}
	}
	parts = append(parts, []byte{'}'})
	if err := writeAtomic(f.store.statePath(), 0o600, parts...); err != nil {
		return err
	}
	f.held = true
	if len(f.changes) >= f.keepBelow {
		f.changes = nil // the file holds it now
	}
	return nil
}

// keepEncodedBelow is the size from which the change store's part is not
// kept once written: the file holds it, and a save of the dialogs, which
// needs it, takes it from there (changesFromFile). Below it, keeping it
// costs less than reading the file again.
const keepEncodedBelow = 1 << 20

// changeRecord is a Change plus what the engine needs to re-plan it.
type changeRecord struct {
	Change
	Src      protocol.Change `json:"src"`              // the change as the stream carried it
	Abs      string          `json:"abs"`              // absolute target under the configured root
	OldAbs   string          `json:"oldAbs,omitempty"` // absolute source of a rename
	Content  *string         `json:"content"`          // whole new content when known (write_to_file)
	Diff     string          `json:"diff"`             // what is planned: Src.Diff, or derived from Content (contentDiff)
	BaseHash string          `json:"baseHash"`         // sha256 of the text the hunks were planned against

	// DiffRef names the blob holding a large Diff (largeDiff). Once the
	// blob is durable the record drops Diff, in memory too; snapshot reads
	// it back for whoever plans the change, from blobs.
	DiffRef *blobRef `json:"diffRef,omitempty"`
	blobs   store
	diffErr error // reading the blob failed (snapshot): planning says so

	// given is the caller's plan of Diff (PlannedChange.Plan) while the
	// record is planned for the first time (recordChange), when plan has
	// checked it was made against the same text: planFile takes it
	// instead of planning Diff again. Never kept beyond that.
	given *diffapply.File

	// planned is the plan of a change recorded to be applied at once
	// (ApplyPatch), so that the apply does not plan it again; in memory
	// only, and dropped when that apply ends.
	planned *keptPlan
}

// keptPlan is what an apply needs of a change's plan against text (hash
// base): its hunks, and the text after its pending hunks (ids). It holds
// only while the change's BaseHash is base and the file still holds
// text. Not the plan itself: a plan holds the file before and after with
// their line tables and the diff's hunks, several times the file, and a
// patch keeps one per file until it is applied.
type keptPlan struct {
	hunks      []Hunk
	ids        []string
	next       []byte
	nextExists bool
	base       string
	text       []byte // the text planned against (not copied: never changed); nil when hashOnly
	exists     bool
	// hashOnly: a large text (keepTextBelow) is not kept, only its hash
	// (base): the apply reads the file again, and hashes it to know it is
	// the text planned against, so that a patch of many large files does
	// not hold every file's text from its plan to its commit.
	hashOnly bool
}

// keepTextBelow is the size from which a kept plan holds only the hash of
// the text it was planned against (keptPlan.hashOnly): below it, comparing
// the bytes again costs less than hashing them.
const keepTextBelow = 1 << 20

// keepPlan renders fp's pending hunks for c (planned against text) the way
// prepareApply would, for the apply that follows; nil when there is
// nothing to keep.
func keepPlan(c *changeRecord, fp *filePlan, text []byte, exists bool) *keptPlan {
	if fp == nil || fp.file == nil || fp.rename {
		return nil
	}
	ids := pendingAfterMerge(c.Hunks, fp.hunks)
	if len(ids) == 0 {
		return nil
	}
	var next []byte
	var err error
	nextExists := true
	if f := fp.file; f.Op != diffapply.OpDelete && len(ids) == okHunks(f) {
		// Every hunk that matched: the text the plan rendered already
		// (Plan's After is Render(nil), and the pending hunks are those).
		next = f.After
	} else if next, nextExists, err = fp.render(ids); err != nil {
		return nil
	}
	if cap(next) > len(next)+len(next)/4 {
		// Rendering sizes its buffer for the file before plus every added
		// line: for a diff that rewrites most of the file (go-udiff's
		// as-applied diff of a large file) twice what it holds, and the
		// apply keeps every file's until it writes them all.
		next = bytes.Clone(next)
	}
	k := &keptPlan{hunks: fp.hunks, ids: ids, next: next, nextExists: nextExists, base: c.BaseHash, text: text, exists: exists}
	if len(text) >= keepTextBelow {
		k.text, k.hashOnly = nil, true
	}
	return k
}

// pendingAfterMerge is the ids of the pending hunks of
// mergeStatuses(old, fresh), without making that copy of the hunks.
func pendingAfterMerge(old, fresh []Hunk) []string {
	if !sameIDs(old, fresh) {
		probe := changeRecord{Change: Change{Hunks: mergeStatuses(old, fresh)}}
		ids, _ := selectHunks(&probe, nil, StatusPending)
		return ids
	}
	status := func(i int) string {
		if s := old[i].Status; s != StatusPending && s != StatusUndone {
			return s
		}
		return fresh[i].Status
	}
	n := 0
	for i := range fresh {
		if status(i) == StatusPending {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	ids := make([]string, 0, n)
	for i := range fresh {
		if status(i) == StatusPending {
			ids = append(ids, fresh[i].ID)
		}
	}
	return ids
}

// source is the file whose text a change is planned against: the source
// of a rename, else the target.
func (c *changeRecord) source() string {
	if c.OldAbs != "" {
		return c.OldAbs
	}
	return c.Abs
}

// sourceRel is source relative to the root.
func (c *changeRecord) sourceRel() string {
	if c.OldAbs != "" {
		return c.OldPath
	}
	return c.Path
}

// Undo record states.
const (
	undoPending = "pending" // written before the file; a crash leaves it to be resolved at start
	undoDone    = "done"    // the write happened; Undo may restore Before
	undoUndone  = "undone"  // Undo restored Before
	undoFailed  = "failed"  // the write did not happen
)

// undoRecord is one write smith made to a file (an apply, or the
// reverse-apply of a rejected hunk): enough to restore the exact bytes from
// before it, and to tell whether the file changed since.
type undoRecord struct {
	Seq      int               `json:"seq"`
	Group    int               `json:"group,omitempty"` // the writes of one apply share it
	ChangeID string            `json:"changeId"`
	Action   string            `json:"action"` // "apply" | "reject"
	Path     string            `json:"path"`   // absolute
	Rel      string            `json:"rel"`
	Via      string            `json:"via"` // "disk" | "editor"
	At       string            `json:"at"`
	Before   blobRef           `json:"before"`
	After    blobRef           `json:"after"`
	State    string            `json:"state"`
	Prev     map[string]string `json:"prevHunks"` // hunk statuses before the write
	// Hunks are the ids the write applied or took back (nil: all of the
	// change's), so that a restart after a crash can settle the change's
	// status from a write that happened.
	Hunks    []string `json:"hunks,omitempty"`
	PrevStat string   `json:"prevStatus"` // change status before the write
	// Mode is the permission bits the undo gives the file back (the
	// blobs keep contents only); 0 when it need give none. A file the
	// write deleted has them when they are not the ones smith creates a
	// file with (diffapply.NewFileMode); a file whose mode the write
	// changed (protocol.Change.Mode) has its bits before, whatever they
	// are. A record saved before mode changes were journalled has none
	// for them: it is read as one that needs none.
	Mode fs.FileMode `json:"mode,omitempty"`

	// prevJSON is Prev encoded (appendStringMap), kept from the first
	// save that writes the record: Prev is never changed once the record
	// is made, and every save writes every record (a large patch's holds
	// thousands of hunks, whose keys the encoding sorts).
	prevJSON []byte
}

// blobRef names file content: absent, or the sha256 of bytes kept in the
// reference itself (Inline: a small text before a write, inlineBelow), or
// in blobs/: loose under their hash, or at Off (Len bytes) in the pack
// blobs/Pack (blobStage). Len is the size of an inline text too.
type blobRef struct {
	Exists bool   `json:"exists"`
	Hash   string `json:"hash,omitempty"`
	Pack   string `json:"pack,omitempty"`
	Off    int64  `json:"off,omitempty"`
	Len    int64  `json:"len,omitempty"`
	Inline []byte `json:"inline,omitempty"`
}

// emptyHash is hashBytes of no bytes: an empty file's text before is
// named by it alone (blobStage.put).
const emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// store is the on-disk state folder of one workspace: where state.json,
// the blobs and the write journal are. The blob store is content-addressed
// (a blob is written once, under its hash), so it needs no lock; state.json
// is written through stateFile.
type store struct {
	dir string
}

func (s store) statePath() string { return filepath.Join(s.dir, "state.json") }
func (s store) blobPath(h string) string {
	return filepath.Join(s.dir, "blobs", h[:2], h)
}

// TxnDir is where diffapply keeps its multi-file transaction journal.
func (s store) txnDir() string { return filepath.Join(s.dir, "txn") }

// errNullState: state.json holds null; load returns a fresh state with it,
// and New starts from that with a warning.
var errNullState = errors.New("the state file holds null")

func (s store) load(ws workspace) (*persisted, error) {
	// The blobs folder is made by the first pack (blobStage.write): an
	// apply of small files needs none.
	b, err := os.ReadFile(s.statePath())
	if errors.Is(err, fs.ErrNotExist) {
		p := newPersisted(ws)
		p.fresh = true
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var p *persisted
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w: %s is corrupt (%v); moving it away starts afresh, without its undo history", ErrStateCorrupt, s.statePath(), err)
	}
	if p == nil {
		// "null" (or an empty object written by hand): nothing to keep,
		// but not silently: the caller warns (errNullState).
		return newPersisted(ws), errNullState
	}
	if p.Version > stateVersion {
		return nil, fmt.Errorf("%w: %s has version %d; this smith understands %d (a newer smith wrote it)", ErrStateCorrupt, s.statePath(), p.Version, stateVersion)
	}
	p.read = p.Version == stateVersion
	return p, nil
}

// blobStage holds the blobs of one save of the journal (the bytes before
// the files of one apply, new changes' large diffs) while they are
// written. They go into one pack file (blobs/pack-*), so that making them
// durable costs one fsync of the pack and one of its folder, however many
// files the apply has; a blob whose hash is stored loose already (an
// older smith's, or one packed earlier) is not written again. Each
// blobRef names its pack and byte range, and getBlob checks the hash of
// what it reads there.
//
// A blob is written to the pack as it is staged, not kept until commit:
// the caller may let go of it at once (an apply of many large files
// stages each file's text before as it prepares it). Nothing refers to
// the pack before commit has made it durable; a stage that is not
// committed is aborted, which removes it (a pack left by a killed process
// is an orphan, never read).
type blobStage struct {
	s    store
	name string   // the pack's file name
	f    *os.File // the pack, once a blob is staged
	size int64
	seen map[string]blobRef
	err  error // the first write that failed: commit reports it
	// inline is how many bytes of texts before put may still keep in
	// their references (undoStage; 0: none).
	inline int64
	// madeDir: write made the blobs folder, whose entry commit syncs too.
	madeDir bool
	// moved are run once commit succeeds (undoStage: records whose
	// inline texts went to this pack take its references).
	moved []func()
}

func (s store) newBlobStage() *blobStage {
	return &blobStage{s: s, seen: map[string]blobRef{}}
}

// packPart is one blob of a pack: bytes, or a string (a diff, written
// without a copy).
type packPart struct {
	b []byte
	s string
}

// put stages b and returns its reference, valid once commit succeeds.
// h is its hash when the caller knows it ("": put computes it).
func (bs *blobStage) put(b []byte, exists bool, h string) (blobRef, error) {
	if !exists {
		return blobRef{}, nil
	}
	if h == "" {
		h = hashBytes(b)
	}
	if len(b) == 0 {
		return blobRef{Exists: true, Hash: h}, nil // getBlob knows the empty text by its hash
	}
	if n := int64(len(b)); n <= inlineBelow && n <= bs.inline {
		bs.inline -= n
		return blobRef{Exists: true, Hash: h, Len: n, Inline: b}, nil
	}
	ref := bs.add(packPart{b: b}, int64(len(b)), h)
	return ref, bs.err
}

// putString stages s like put, without copying it; a failed write is
// reported by commit.
func (bs *blobStage) putString(s string) blobRef {
	return bs.add(packPart{s: s}, int64(len(s)), hashString(s))
}

func (bs *blobStage) add(p packPart, n int64, h string) blobRef {
	if ref, ok := bs.seen[h]; ok {
		return ref
	}
	ref := blobRef{Exists: true, Hash: h}
	if _, err := os.Stat(bs.s.blobPath(h)); err != nil {
		bs.write(p)
		ref.Pack, ref.Off, ref.Len = bs.name, bs.size, n
		bs.size += n
	}
	bs.seen[h] = ref
	return ref
}

// write appends p to the pack, making the pack on the first blob.
func (bs *blobStage) write(p packPart) {
	if bs.err != nil {
		return
	}
	if bs.f == nil {
		bs.name = fmt.Sprintf("pack-%d-%s", time.Now().UnixNano(), randomHex(4))
		dir := bs.s.packDir()
		if err := os.Mkdir(dir, 0o700); err == nil {
			bs.madeDir = true
		} else if !errors.Is(err, fs.ErrExist) {
			bs.err = fmt.Errorf("blob store: %w", err)
			return
		}
		// Under its final name at once: a pack is named afresh for each
		// stage, and nothing refers to it before commit returns.
		f, err := os.OpenFile(filepath.Join(dir, bs.name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			bs.err = fmt.Errorf("blob store: %w", err)
			return
		}
		bs.f = f
	}
	var err error
	if p.b != nil {
		_, err = bs.f.Write(p.b)
	} else {
		_, err = bs.f.WriteString(p.s)
	}
	if err != nil {
		bs.err = fmt.Errorf("blob store: write %s: %w", bs.f.Name(), err)
	}
}

// okHunks counts the hunks of f that matched.
func okHunks(f *diffapply.File) int {
	n := 0
	for _, h := range f.Hunks {
		if h.OK() {
			n++
		}
	}
	return n
}

// hashString is hashBytes of s, through a small buffer rather than a
// copy of all of s (a diff may be tens of megabytes).
func hashString(s string) string {
	h := sha256.New()
	var buf [32 << 10]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

// commit makes the pack durable: the file, then its folder (the entry
// that names it). Nothing staged, nothing written. A failed stage is
// removed.
func (bs *blobStage) commit() error {
	if bs.f == nil {
		return bs.err
	}
	f, err := bs.f, bs.err
	bs.f = nil
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		syncDir(filepath.Dir(f.Name()))
		if bs.madeDir {
			syncDir(bs.s.dir) // the blobs folder's own entry, once
		}
		for _, f := range bs.moved {
			f()
		}
		return nil
	}
	os.Remove(f.Name())
	if bs.err == nil {
		err = fmt.Errorf("blob store: write %s: %w", f.Name(), err)
	}
	return err
}

// abort removes a stage that will not be committed (a no-op once it is).
func (bs *blobStage) abort() {
	if bs.f != nil {
		bs.f.Close()
		os.Remove(bs.f.Name())
		bs.f = nil
	}
}

// syncDir makes the entries of dir durable; best effort, as in diffapply:
// some file systems refuse to sync directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// randomHex is n random bytes in hex, for the names of packs and temp
// files, which must not collide and need not be secret (see diffapply's
// randomHex).
func randomHex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return hex.EncodeToString(b)
}

// hashRef names content without storing it: the bytes after a write are
// in the written file, and the journal needs only their hash to tell
// whether the file still holds them.
func hashRef(b []byte, exists bool) blobRef {
	if !exists {
		return blobRef{}
	}
	return blobRef{Exists: true, Hash: hashBytes(b)}
}

// packDir holds the packs of blobs (blobStage), beside the folders of
// loose blobs (blobPath).
func (s store) packDir() string { return filepath.Join(s.dir, "blobs") }

func (s store) getBlob(r blobRef) ([]byte, error) {
	if !r.Exists {
		return nil, nil
	}
	var b []byte
	var err error
	switch {
	case r.Inline != nil:
		b = r.Inline
	case r.Pack == "" && r.Hash == emptyHash:
		b = []byte{}
	case r.Pack == "":
		b, err = os.ReadFile(s.blobPath(r.Hash))
	default:
		b, err = readRange(filepath.Join(s.packDir(), filepath.Base(r.Pack)), r.Off, r.Len)
	}
	if err != nil {
		return nil, fmt.Errorf("undo journal blob %s: %w", r.Hash[:12], err)
	}
	if hashBytes(b) != r.Hash {
		return nil, fmt.Errorf("undo journal blob %s is damaged", r.Hash[:12])
	}
	return b, nil
}

// readRange reads n bytes at off of the file at p; a range the file does
// not hold (a damaged state file) is an error, not a huge allocation.
func readRange(p string, off, n int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off+n > fi.Size() {
		return nil, fmt.Errorf("bytes %d to %d are not in %s (%d bytes)", off, off+n, filepath.Base(p), fi.Size())
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

// removeTemps deletes the temp files (.tmp-*) that writeAtomic leaves
// behind when the process is killed between creating and renaming one.
// Only the engine holding the state folder's lock calls it, so no temp
// file found is in use.
func (s store) removeTemps() {
	dirs := []string{s.dir}
	if subs, err := os.ReadDir(filepath.Join(s.dir, "blobs")); err == nil {
		for _, d := range subs {
			if d.IsDir() {
				dirs = append(dirs, filepath.Join(s.dir, "blobs", d.Name()))
			}
		}
	}
	for _, d := range dirs {
		ents, _ := os.ReadDir(d)
		for _, de := range ents {
			if de.Type().IsRegular() && strings.HasPrefix(de.Name(), ".tmp-") {
				os.Remove(filepath.Join(d, de.Name()))
			}
		}
	}
}

// writeAtomic writes a file of smith's own state: temp file in the same
// folder, fsync, rename.
func writeAtomic(path string, perm fs.FileMode, parts ...[]byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	var werr error
	for _, b := range parts {
		if _, werr = f.Write(b); werr != nil {
			break
		}
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil && perm != 0o600 { // CreateTemp made it 0600
		werr = os.Chmod(tmp, perm)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

// matches reports whether content (present or not) is what r names.
func (r blobRef) matches(b []byte, exists bool) bool {
	if r.Exists != exists {
		return false
	}
	return !exists || hashBytes(b) == r.Hash
}
