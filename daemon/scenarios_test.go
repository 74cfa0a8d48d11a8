package daemon

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

func TestAutoApplyWritesProposalsAsTheyArrive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo},
		mutate: func(c *Config) { c.AutoApply = true }})
	p := f.e.Attach(nil)
	res, _ := f.mustChat(p, "rename Foo to Bar in main.go")
	if c := f.change(res); c.Status != StatusApplied {
		t.Fatalf("status %s, want applied", c.Status)
	}
	if f.read("main.go") != strings.ReplaceAll(mainGo, "Foo", "Bar") {
		t.Fatalf("main.go:\n%s", f.read("main.go"))
	}
}

func TestUndoThroughTheEditor(t *testing.T) {
	t.Parallel()
	f, ed, p, c := renameProposedInEditor(t, 1)
	f.mustApply(p, c.ID)
	got, err := f.e.Undo(WithPeer(context.Background(), p), "")
	if err != nil {
		t.Fatal(err)
	}
	calls := ed.applyCalls()
	if len(calls) != 2 {
		t.Fatalf("%d ApplyEdit calls, want apply + undo", len(calls))
	}
	undo := calls[1].Edits[0]
	if undo.Version != 2 || string(undo.NewText) != mainGo {
		t.Fatalf("undo edit version %d, text:\n%s", undo.Version, undo.NewText)
	}
	if text, _ := ed.text(f.path("main.go")); text != mainGo {
		t.Fatalf("buffer after undo:\n%s", text)
	}
	if got.Status != StatusUndone || got.Hunks[0].Status != StatusUndone {
		t.Fatalf("after undo: %+v", got)
	}
	// An undone change can be applied again.
	if _, err := f.e.Apply(WithPeer(context.Background(), p), c.ID, nil); err != nil {
		t.Fatalf("re-apply after undo: %v", err)
	}
}

func TestCreateAndDeleteProposalsAndTheirUndo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"old.txt": "bye\r\nno final newline"}})
	p := f.e.Attach(nil)
	res, _ := f.mustChat(p, "create new.txt with hello")
	created := f.change(res)
	if created.Status != StatusPending {
		t.Fatalf("create: %+v", created)
	}
	if _, err := os.Stat(f.path("new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("new.txt exists before Apply")
	}
	if _, err := f.e.Apply(WithPeer(context.Background(), p), created.ID, nil); err != nil {
		t.Fatal(err)
	}
	if f.read("new.txt") != "hello\n" {
		t.Fatalf("new.txt: %q", f.read("new.txt"))
	}
	res, _ = f.mustChat(p, "delete old.txt")
	deleted := f.change(res)
	if _, err := f.e.Apply(WithPeer(context.Background(), p), deleted.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.path("old.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("old.txt survived its deletion")
	}
	// Undo, most recent first: the deleted file comes back byte for byte,
	// the created one goes away.
	for range 2 {
		if _, err := f.e.Undo(WithPeer(context.Background(), p), ""); err != nil {
			t.Fatal(err)
		}
	}
	if f.read("old.txt") != "bye\r\nno final newline" {
		t.Fatalf("old.txt after undo: %q", f.read("old.txt"))
	}
	if _, err := os.Stat(f.path("new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("new.txt survived the undo of its creation")
	}
	if _, err := f.e.Undo(WithPeer(context.Background(), p), ""); err == nil {
		t.Fatal("a third undo found something to undo")
	}
}

func TestBadRequestsLeaveFilesAndStateAlone(t *testing.T) {
	t.Parallel()
	f, p, c := renameProposed(t)
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"unknown change", func() error { _, err := f.e.Apply(WithPeer(context.Background(), p), "c99", nil); return err }, ErrUnknownChange},
		{"unknown hunk", func() error { _, err := f.e.Apply(WithPeer(context.Background(), p), c.ID, []string{"h9"}); return err }, ErrUnknownChange},
		{"reject unknown", func() error { _, err := f.e.Reject(WithPeer(context.Background(), p), "nope", nil); return err }, ErrUnknownChange},
		{"undo unknown", func() error { _, err := f.e.Undo(WithPeer(context.Background(), p), "c42"); return err }, ErrUnknownChange},
		{"undo unwritten", func() error { _, err := f.e.Undo(WithPeer(context.Background(), p), c.ID); return err }, nil},
		{"preview unknown", func() error { _, err := f.e.Preview(context.Background(), "c0", nil); return err }, ErrUnknownChange},
		{"empty message", func() error { _, _, err := f.chat(context.Background(), p, ChatRequest{Message: "  "}); return err }, ErrEmptyMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
	if f.read("main.go") != mainGo {
		t.Fatal("main.go was written")
	}
	if now, _ := f.e.Change(c.ID); now.Status != StatusPending || now.Hunks[0].Status != StatusPending {
		t.Fatalf("change state moved: %+v", now)
	}
}

func TestPreviewShowsTheResultWithoutWriting(t *testing.T) {
	t.Parallel()
	f, _, c := renameProposed(t)
	pv, err := f.e.Preview(context.Background(), c.ID, []string{"h1"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(mainGo, "func Foo", "func Bar", 1)
	if pv.Path != "main.go" || pv.Original != mainGo || pv.Result != want {
		t.Fatalf("preview %+v", pv)
	}
	if !strings.Contains(pv.Diff, "-func Foo() int {") || !strings.Contains(pv.Diff, "+func Bar() int {") || strings.Contains(pv.Diff, "println") {
		t.Fatalf("preview diff:\n%s", pv.Diff)
	}
	if f.read("main.go") != mainGo {
		t.Fatal("preview wrote main.go")
	}
}

func TestSessionResetRestoresFilesAndTellsTheEditors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", files: map[string]string{"main.go": mainGo}})
	ed := newTestEditor()
	p := f.e.Attach(ed)
	res, evs := f.mustChat(p, "rename Foo to Bar in main.go")
	if f.read("main.go") == mainGo {
		t.Fatal("the v2 upstream did not write main.go")
	}
	reset, err := f.e.Reset(context.Background(), res.DialogID)
	if err != nil {
		t.Fatal(err)
	}
	if reset.NewSession == "" {
		t.Fatalf("reset answer %+v", reset)
	}
	if f.read("main.go") != mainGo {
		t.Fatalf("reset did not restore main.go:\n%s", f.read("main.go"))
	}
	// Once for the upstream's write, once for the reset (delivered on the
	// Peer's own goroutine, perhaps after Reset returned).
	waitFor(t, "two fileChanged for main.go", func() bool {
		n := 0
		for _, x := range ed.notifications() {
			if x.Kind == NoteFileChanged && x.Path == f.path("main.go") {
				n++
			}
		}
		return n >= 2
	})

	// Restore to the checkpoint the turn's user event carried.
	var cp string
	for _, ev := range evs {
		if ev.Type == protocol.KindNotice && ev.Notice.Kind == "user" {
			cp = ev.Notice.Checkpoint
		}
	}
	if cp == "" {
		t.Fatal("no checkpoint on the user event")
	}
	if _, err := f.e.Restore(context.Background(), res.DialogID, cp); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Approve(context.Background(), ""); err != nil {
		t.Fatalf("approve the current dialog: %v", err)
	}
	if _, err := f.e.Restore(context.Background(), res.DialogID, "nope"); err == nil {
		t.Fatal("restore to an unknown checkpoint succeeded")
	}
}

func TestSessionCallsNeedAgentSmithy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", mutate: func(c *Config) { c.Dialect = protocol.DialectTextbook }})
	if _, err := f.e.Approve(context.Background(), ""); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("approve on textbook: %v", err)
	}
}

func TestLocalDialogsForUpstreamsWithoutDialogs(t *testing.T) {
	t.Parallel()
	e := textbookEngine(t, nil)
	p := e.Attach(nil)
	var first *ChatResult
	for _, msg := range []string{"hello there", "and again"} {
		res, err := e.Chat(WithPeer(context.Background(), p), ChatRequest{Message: msg}, nil)
		if err != nil || res.Outcome != protocol.OutcomeCompleted {
			t.Fatalf("chat: %v %+v", err, res)
		}
		if first == nil {
			first = res
		} else if res.DialogID != first.DialogID {
			t.Fatalf("second turn in dialog %s, first in %s", res.DialogID, first.DialogID)
		}
	}
	ds, err := e.Dialogs(context.Background())
	if err != nil || len(ds) != 1 || ds[0].ID != first.DialogID || !ds[0].Current {
		t.Fatalf("dialogs %+v %v", ds, err)
	}
	page, err := e.History(context.Background(), first.DialogID, 10, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 4 || page.Events[0].Content != "hello there" || page.Events[2].Type != "user" || *page.Events[2].Idx != 2 {
		t.Fatalf("history %+v", page)
	}
	if err := e.SelectDialog(context.Background(), "nope"); !errors.Is(err, ErrUnknownDialog) {
		t.Fatalf("select unknown: %v", err)
	}
	if _, err := e.Chat(WithPeer(context.Background(), p), ChatRequest{DialogID: "nope", Message: "x"}, nil); !errors.Is(err, ErrUnknownDialog) {
		t.Fatalf("chat in unknown local dialog: %v", err)
	}
}

func TestDialogLearntFromTheStream(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	up, err := upstream.New(upstream.Options{Workspace: ws, PingInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	// The dialog API fails (a 500 is no answer): the engine cannot know the
	// dialog before the stream and must learn it from the first event.
	h := up.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/dialogs") {
			http.Error(w, "Internal Server Error", http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	e, err := New(context.Background(), Config{Workspace: ws, Upstream: srv.URL, StateDir: t.TempDir(), NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var evs []protocol.Event
	res, err := e.Chat(context.Background(), ChatRequest{Message: "hello there"}, func(ev protocol.Event) { evs = append(evs, ev) })
	if err != nil {
		t.Fatal(err)
	}
	if res.DialogID == "" {
		t.Fatal("the dialog was not learnt")
	}
	for _, ev := range evs {
		if ev.DialogID != res.DialogID || ev.TurnID != res.TurnID {
			t.Fatalf("event %d tagged %s/%s, want %s/%s", ev.Seq, ev.DialogID, ev.TurnID, res.DialogID, res.TurnID)
		}
	}
	if st, _ := e.Status(context.Background()); st.CurrentDialog != res.DialogID || !st.Reachable || st.RunningTurns != 0 || st.Detected != "agentsmithy v2" {
		t.Fatalf("status %+v", st)
	}
}

func TestConcurrentTurnsKeepTheirOwnEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", files: map[string]string{"a.go": "package a\n\nfunc A() {}\n", "b.go": "package b\n\nfunc B() {}\n"}})
	var wg sync.WaitGroup
	type out struct {
		res *ChatResult
		evs []protocol.Event
		err error
	}
	outs := make([]out, 4)
	for i := range outs {
		d, err := f.e.NewDialog(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		p := f.e.Attach(nil)
		msg := []string{"add a comment to A in a.go", "add a comment to B in b.go", "hello there", "what is in a.go"}[i]
		wg.Go(func() {
			o := &outs[i]
			o.res, o.err = f.e.Chat(WithPeer(context.Background(), p), ChatRequest{DialogID: d.ID, Message: msg}, func(ev protocol.Event) { o.evs = append(o.evs, ev) })
		})
	}
	wg.Wait()
	turns := map[string]bool{}
	for i, o := range outs {
		if o.err != nil || o.res.Outcome != protocol.OutcomeCompleted {
			t.Fatalf("turn %d: %v %+v", i, o.err, o.res)
		}
		turns[o.res.TurnID] = true
		for j, ev := range o.evs {
			if ev.TurnID != o.res.TurnID || ev.DialogID != o.res.DialogID || ev.Seq != int64(j+1) {
				t.Fatalf("turn %s got event %+v", o.res.TurnID, ev)
			}
		}
		for _, id := range o.res.Changes {
			c, _ := f.e.Change(id)
			if c.TurnID != o.res.TurnID {
				t.Fatalf("change %s of turn %s recorded for %s", id, o.res.TurnID, c.TurnID)
			}
		}
	}
	if len(turns) != len(outs) {
		t.Fatalf("turn ids %v are not distinct", turns)
	}
}

func TestInterruptedWriteIsSettledAtStart(t *testing.T) {
	t.Parallel()
	f, p, c := renameProposed(t)
	f.mustApply(p, c.ID)
	dir := f.e.StateDir()
	f.e.Close()
	// Make the journal look as if the process died between writing the
	// file and marking the record done.
	st, err := store{dir: dir}.load(workspace{})
	if err != nil {
		t.Fatal(err)
	}
	st.Undo[len(st.Undo)-1].State = undoPending
	file, err := newStateFile(store{dir: dir}, st)
	if err != nil {
		t.Fatal(err)
	}
	if err := file.saveChanges(&st.changesState); err != nil {
		t.Fatal(err)
	}
	f.e = f.open()
	if _, err := f.e.Undo(context.Background(), c.ID); err != nil {
		t.Fatalf("undo of a settled write: %v", err)
	}
	if f.read("main.go") != mainGo {
		t.Fatal("undo did not restore main.go")
	}
}

func TestStateLivesOutsideTheWorkspace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo}})
	p := f.e.Attach(nil)
	res, _ := f.mustChat(p, "rename Foo to Bar in main.go")
	if _, err := f.e.Apply(WithPeer(context.Background(), p), res.Changes[0], nil); err != nil {
		t.Fatal(err)
	}
	var names []string
	entries, _ := os.ReadDir(f.ws)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// The embedded upstream keeps its own state in .agentsmithy, like the
	// real server; smith adds nothing.
	names = slices.DeleteFunc(names, func(n string) bool { return n == ".agentsmithy" })
	if !slices.Equal(names, []string{"main.go"}) {
		t.Fatalf("workspace holds %v", names)
	}
	if !strings.HasPrefix(f.e.StateDir(), f.state) {
		t.Fatalf("state dir %s is not under %s", f.e.StateDir(), f.state)
	}
}

func TestWatcherSeesFilesInNewDirectories(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0"})
	p := f.e.Attach(nil)
	res, _ := f.mustChat(p, "create sub/dir/new.txt with hi")
	c := f.change(res)
	if c.Status != StatusPending || c.Kind != protocol.ChangeCreate {
		t.Fatalf("create proposal %+v", c)
	}
	// mkdir -p, then the file: only a scan of the new directories finds it.
	if err := os.MkdirAll(f.path("sub/dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.write("sub/dir/new.txt", "somebody else's\n")
	waitFor(t, "conflict on sub/dir/new.txt", func() bool {
		now, _ := f.e.Change(c.ID)
		return now.Status == StatusConflict
	})
	// The same content as the proposal: nothing left to do.
	f.write("sub/dir/new.txt", "hi\n")
	waitFor(t, "stale", func() bool {
		now, _ := f.e.Change(c.ID)
		return now.Status == StatusStale
	})
}

func TestCloseCancelsRunningTurns(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2"})
	p := f.e.Attach(nil)
	var res *ChatResult
	first := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var err error
		seen := false
		res, err = f.e.Chat(WithPeer(withFault(context.Background(), "stall=60"), p), ChatRequest{Message: "hello there"}, func(protocol.Event) {
			if !seen {
				seen = true
				close(first)
			}
		})
		done <- err
	}()
	<-first
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("turn ended by Close: %v", err)
	}
	if res.Outcome != protocol.OutcomeCancelled {
		t.Fatalf("outcome %s, want cancelled", res.Outcome)
	}
	if _, _, err := f.chat(context.Background(), p, ChatRequest{Message: "again"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("chat after Close: %v", err)
	}
}

func TestPendingChangesSurviveARestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo}})
	res, _ := f.mustChat(f.e.Attach(nil), "rename Foo to Bar in main.go")
	c := f.change(res)
	f.e.Close()
	// While nothing watches, the file moves under the change.
	f.write("main.go", "// moved\n"+mainGo)
	f.e = f.open()
	now, err := f.e.Change(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if now.Status != StatusPending || now.Hunks[0].Offset != c.Hunks[0].Offset+1 {
		t.Fatalf("after restart: %+v, want pending and re-anchored one line down", now)
	}
	if _, err := f.e.Apply(context.Background(), c.ID, nil); err != nil {
		t.Fatal(err)
	}
	if f.read("main.go") != "// moved\n"+strings.ReplaceAll(mainGo, "Foo", "Bar") {
		t.Fatalf("main.go:\n%s", f.read("main.go"))
	}
}

func TestAppliedUpstreamPerProtocol(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"v1", "v2"} {
		t.Run(proto, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{protocol: proto, files: map[string]string{"main.go": mainGo}})
			p := f.e.Attach(nil)
			res, _ := f.mustChat(p, "add a comment to main in main.go")
			c := f.change(res)
			if c.Status != StatusAppliedUpstream || len(c.Hunks) != 1 {
				t.Fatalf("change %+v", c)
			}
			if _, err := f.e.Reject(WithPeer(context.Background(), p), c.ID, nil); err != nil {
				t.Fatal(err)
			}
			if f.read("main.go") != mainGo {
				t.Fatalf("main.go after rejecting the upstream's comment:\n%s", f.read("main.go"))
			}
			// Reject is a write smith made: undo brings the comment back.
			if _, err := f.e.Undo(WithPeer(context.Background(), p), c.ID); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(f.read("main.go"), "// main is documented") {
				t.Fatalf("undo of the reject:\n%s", f.read("main.go"))
			}
			if now, _ := f.e.Change(c.ID); now.Status != StatusAppliedUpstream {
				t.Fatalf("status after undoing the reject: %s", now.Status)
			}
		})
	}
}

func TestUpstreamWriteThatDoesNotMatchDiskIsAConflict(t *testing.T) {
	t.Parallel()
	replay := []byte(`data: {"dialog_id": "d1", "type": "file_edit", "file": "main.go", "diff": "--- a/main.go\n+++ b/main.go\n@@ -1,3 +1,3 @@\n package main\n \n-func Foo() int {\n+func Baz() int {\n"}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "tool_call", "name": "write_to_file", "args": {"path": "notes.txt", "content": "new notes\n"}}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "file_edit", "file": "notes.txt"}` + "\r\n\r\n" +
		`data: {"dialog_id": "d1", "type": "done", "done": true}` + "\r\n\r\n")
	f := newFixture(t, fixtureOpts{protocol: "v2", replay: replay, files: map[string]string{"main.go": mainGo, "notes.txt": "old notes\n"}})
	res, _ := f.mustChat(f.e.Attach(nil), "anything")
	for _, id := range res.Changes {
		c, _ := f.e.Change(id)
		if c.Status != StatusConflict || c.Reason == "" {
			t.Fatalf("change %+v: the file does not hold what the upstream reported, want conflict", c)
		}
	}
	if len(res.Changes) != 2 || f.read("main.go") != mainGo || f.read("notes.txt") != "old notes\n" {
		t.Fatal("files were touched or changes missed")
	}
}

func TestStatusOfAnUnreachableUpstream(t *testing.T) {
	t.Parallel()
	e, err := New(context.Background(), Config{Workspace: t.TempDir(), Upstream: "http://" + closedAddr(t), StateDir: t.TempDir(), NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st, _ := e.Status(context.Background())
	if st.Reachable || st.Error == "" || st.Dialect != "auto" {
		t.Fatalf("status %+v", st)
	}
	if _, err := e.Dialogs(context.Background()); !errors.Is(err, protocol.ErrUnreachable) {
		t.Fatalf("dialogs of an unreachable upstream: %v", err)
	}
}

func TestApplyChangesAllOrNothing(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"a.go": "package a\n\nfunc Foo() {}\n",
		"b.go": "package b\n\nvar x = Foo\n",
		"c.go": "package c\n\n// Foo is used here too\n",
	}
	f := newFixture(t, fixtureOpts{protocol: "v0", files: files, mutate: func(c *Config) { c.NoWatch = true }})
	ed := newTestEditor()
	ed.open(f.path("b.go"), files["b.go"], 4)
	p := f.e.Attach(ed)
	res, _ := f.mustChat(p, "rename Foo to Bar in all files")
	if len(res.Changes) != 3 {
		t.Fatalf("changes %v, want 3", res.Changes)
	}

	// c.go moves on: the whole batch is refused, nothing is written.
	f.write("c.go", "package c\n")
	if _, err := f.e.ApplyChanges(WithPeer(context.Background(), p), res.Changes); !errors.Is(err, ErrConflict) {
		t.Fatalf("batch over a changed file: %v", err)
	}
	if f.read("a.go") != files["a.go"] || len(ed.applyCalls()) != 0 {
		t.Fatal("a refused batch wrote something")
	}
	f.write("c.go", files["c.go"])
	// The failed Apply re-validated c.go against "package c": back to its
	// text, the change is re-validated again on the next try.
	f.e.Revalidate(f.path("c.go"))

	var ids []string
	for _, c := range f.e.list(ChangeFilter{TurnID: res.TurnID, Status: StatusPending}) {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, res.Changes) {
		t.Fatalf("pending changes of turn %s: %v, want %v", res.TurnID, ids, res.Changes)
	}
	got, err := f.e.ApplyChanges(WithPeer(context.Background(), p), ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.Status != StatusApplied {
			t.Fatalf("change %+v", c)
		}
	}
	if f.read("a.go") != strings.ReplaceAll(files["a.go"], "Foo", "Bar") || f.read("c.go") != strings.ReplaceAll(files["c.go"], "Foo", "Bar") {
		t.Fatal("disk files not written")
	}
	if text, _ := ed.text(f.path("b.go")); text != strings.ReplaceAll(files["b.go"], "Foo", "Bar") || f.read("b.go") != files["b.go"] {
		t.Fatalf("b.go went to disk instead of the open buffer: %q", text)
	}
	// One undo takes the whole batch back.
	if _, err := f.e.Undo(WithPeer(context.Background(), p), ""); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if f.read(name) != text {
			t.Fatalf("%s after undo: %q", name, f.read(name))
		}
	}
	if text, _ := ed.text(f.path("b.go")); text != files["b.go"] {
		t.Fatalf("b.go buffer after undo: %q", text)
	}
	if _, err := f.e.Undo(WithPeer(context.Background(), p), ""); err == nil {
		t.Fatal("a second undo found something")
	}
}

func TestProposeOutsideATurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", files: map[string]string{"main.go": mainGo}, mutate: func(c *Config) { c.NoWatch = true }})
	p := f.e.Attach(nil)
	diff := "--- a/main.go\n+++ b/main.go\n@@ -1,4 +1,4 @@\n package main\n \n-func Foo() int {\n+func Foo() int64 {\n \treturn 1\n"
	c, err := f.e.Propose(WithPeer(context.Background(), p), "", protocol.Change{Path: "main.go", Diff: diff})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != StatusPending || len(c.Hunks) != 1 || c.TurnID != "" {
		t.Fatalf("proposal %+v", c)
	}
	f.mustApply(p, c.ID)
	if !strings.Contains(f.read("main.go"), "func Foo() int64 {") {
		t.Fatalf("main.go:\n%s", f.read("main.go"))
	}
	if _, err := f.e.Propose(WithPeer(context.Background(), p), "", protocol.Change{Path: "../x.go", Content: "x", HasContent: true}); !errors.Is(err, ErrOutsideWorkspace) {
		t.Fatalf("outside proposal: %v", err)
	}
	if n := len(f.e.list(ChangeFilter{})); n != 1 {
		t.Fatalf("%d changes recorded, want 1", n)
	}
}

func TestCurrentDialogSurvivesARestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", mutate: func(c *Config) { c.NoWatch = true }})
	res, _ := f.mustChat(f.e.Attach(nil), "hello there")
	d2, err := f.e.NewDialog(context.Background(), "second")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.e.SelectDialog(context.Background(), res.DialogID); err != nil {
		t.Fatal(err)
	}
	f.e.Close()
	f.e = f.open()
	again, _ := f.mustChat(f.e.Attach(nil), "hello again")
	if again.DialogID != res.DialogID {
		t.Fatalf("after restart the turn ran in %s, want the current dialog %s", again.DialogID, res.DialogID)
	}
	if again.TurnID == res.TurnID {
		t.Fatalf("turn id %s reused after a restart", again.TurnID)
	}
	if err := f.e.RenameDialog(context.Background(), d2.ID, "renamed"); err != nil {
		t.Fatal(err)
	}
	ds, err := f.e.Dialogs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ds, func(d Dialog) bool { return d.ID == d2.ID })
	if i < 0 || ds[i].Title != "renamed" {
		t.Fatalf("dialogs %+v", ds)
	}
	page, err := f.e.History(context.Background(), res.DialogID, 10, -1)
	if err != nil || !slices.ContainsFunc(page.Events, func(ev protocol.HistoryEvent) bool { return strings.Contains(ev.Content, "hello again") }) {
		t.Fatalf("history %+v %v", page, err)
	}
	if err := f.e.DeleteDialog(context.Background(), d2.ID); err != nil {
		t.Fatal(err)
	}
}

func TestOneEnginePerWorkspaceState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", mutate: func(c *Config) { c.NoWatch = true }})
	if _, err := New(context.Background(), f.cfg); !errors.Is(err, ErrStateLocked) || !strings.Contains(err.Error(), "pid") {
		t.Fatalf("second engine on the same state: %v, want ErrStateLocked naming the holder", err)
	}
	f.e.Close()
	f.e = f.open() // released by Close
}

func TestRenames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v2", mutate: func(c *Config) { c.NoWatch = true },
		files: map[string]string{"old.txt": "keep me\r\n", "a.go": "package a\n\nfunc A() {}\n", "taken.txt": "x"}})
	p := f.e.Attach(nil)
	ctx := context.Background()

	c, err := f.e.Propose(WithPeer(context.Background(), p), "", protocol.Change{Path: "sub/new.txt", OldPath: "old.txt", Kind: protocol.ChangeRename})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != StatusPending || c.Kind != protocol.ChangeRename || c.OldPath != "old.txt" || c.Path != "sub/new.txt" {
		t.Fatalf("rename proposal %+v", c)
	}
	if _, err := f.e.Apply(WithPeer(ctx, p), c.ID, nil); err != nil {
		t.Fatal(err)
	}
	if f.read("sub/new.txt") != "keep me\r\n" {
		t.Fatalf("sub/new.txt: %q", f.read("sub/new.txt"))
	}
	if _, err := os.Stat(f.path("old.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("old.txt survived its rename")
	}
	if _, err := f.e.Reject(WithPeer(ctx, p), c.ID, nil); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("reject of an applied rename: %v", err)
	}
	if _, err := f.e.Undo(WithPeer(ctx, p), c.ID); err != nil {
		t.Fatal(err)
	}
	if f.read("old.txt") != "keep me\r\n" {
		t.Fatal("undo did not bring old.txt back")
	}
	if _, err := os.Stat(f.path("sub/new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("undo left sub/new.txt")
	}

	// A rename with edits.
	diff := "--- a/a.go\n+++ b/b.go\n@@ -1,3 +1,3 @@\n-package a\n+package b\n \n func A() {}\n"
	c2, err := f.e.Propose(WithPeer(context.Background(), p), "", protocol.Change{Path: "b.go", OldPath: "a.go", Kind: protocol.ChangeRename, Diff: diff})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Apply(WithPeer(ctx, p), c2.ID, nil); err != nil {
		t.Fatal(err)
	}
	if f.read("b.go") != "package b\n\nfunc A() {}\n" {
		t.Fatalf("b.go: %q", f.read("b.go"))
	}

	// A rename onto an existing file is a conflict; nothing moves.
	c3, err := f.e.Propose(WithPeer(context.Background(), p), "", protocol.Change{Path: "taken.txt", OldPath: "b.go", Kind: protocol.ChangeRename})
	if err != nil {
		t.Fatal(err)
	}
	if c3.Status != StatusConflict || !strings.Contains(c3.Reason, "already exists") {
		t.Fatalf("rename onto an existing file: %+v", c3)
	}
	if _, err := f.e.Apply(WithPeer(ctx, p), c3.ID, nil); !errors.Is(err, ErrConflict) || f.read("taken.txt") != "x" {
		t.Fatalf("apply of a conflicting rename: %v", err)
	}
}

// TestEditorMayCallBackFromNotify: a front that answers a notification by
// calling the engine at once (list, preview, even reject) must not
// deadlock it.
func TestEditorMayCallBackFromNotify(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": mainGo, "b.txt": "b\n"}})
	ed := newTestEditor()
	p := f.e.Attach(ed)
	res, _ := f.mustChat(p, "rename Foo to Bar in main.go")
	other, _ := f.mustChat(p, "create b.txt with bee")
	var calls atomic.Int32
	ed.mu.Lock() // Notify runs on the Peer's delivery goroutine
	ed.onNotify = func(n Notification) {
		if n.Kind != NoteChangeUpdated || n.Change.ID != res.Changes[0] {
			return
		}
		first := calls.Add(1) == 1
		f.e.list(ChangeFilter{})
		if _, err := f.e.Preview(context.Background(), other.Changes[0], nil); err != nil {
			t.Errorf("preview from Notify: %v", err)
		}
		if _, err := f.e.Reject(WithPeer(context.Background(), p), other.Changes[0], nil); err != nil && first {
			t.Errorf("reject from Notify: %v", err)
		}
	}
	ed.mu.Unlock()
	if _, err := f.e.Apply(WithPeer(context.Background(), p), res.Changes[0], nil); err != nil {
		t.Fatal(err)
	}
	// Notifications are delivered on the Peer's own goroutine, after
	// Apply may have returned.
	waitFor(t, "the reject from Notify", func() bool {
		c, _ := f.e.Change(other.Changes[0])
		return calls.Load() > 0 && c.Status == StatusRejected
	})
}

// TestLocalDialogsAcrossDialects: every dialect without a dialog API gets
// smith's local dialogs; those whose server names the conversation
// (lifecycle's session, oracle's context_id) have that name learnt on the
// first turn and sent with the next.
func TestLocalDialogsAcrossDialects(t *testing.T) {
	t.Parallel()
	for _, d := range []protocol.Dialect{protocol.DialectTextbook, protocol.DialectRAG, protocol.DialectOracle, protocol.DialectLifecycle} {
		t.Run(string(d), func(t *testing.T) {
			ws := t.TempDir()
			if err := os.WriteFile(ws+"/calc.go", []byte("package calc\n\nfunc total() int { return 1 }\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			up, err := upstream.New(upstream.Options{Workspace: ws, Dialect: d, PingInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(up.Handler())
			defer srv.Close()
			e, err := New(context.Background(), Config{Workspace: ws, Upstream: srv.URL, Dialect: d, StateDir: t.TempDir(), NoWatch: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			p := e.Attach(nil)
			var dialog string
			for _, msg := range []string{"rename total to subtotal in calc.go", "hello there"} {
				var evs []protocol.Event
				res, err := e.Chat(WithPeer(context.Background(), p), ChatRequest{Message: msg}, func(ev protocol.Event) { evs = append(evs, ev) })
				if err != nil || res.Outcome != protocol.OutcomeCompleted {
					t.Fatalf("%q: %v %+v %+v", msg, err, res, evs)
				}
				if dialog == "" {
					dialog = res.DialogID
				} else if res.DialogID != dialog {
					t.Fatalf("second turn in %s, first in %s", res.DialogID, dialog)
				}
				for _, ev := range evs {
					if ev.DialogID != dialog {
						t.Fatalf("event tagged %s, want smith's dialog %s", ev.DialogID, dialog)
					}
				}
			}
			e.mu.Lock()
			ld := e.dr.localDialog(dialog)
			e.mu.Unlock()
			if ld == nil || len(ld.Messages) < 3 {
				t.Fatalf("local dialog %+v", ld)
			}
			if (d == protocol.DialectLifecycle || d == protocol.DialectOracle) && ld.UpstreamID == "" {
				t.Fatalf("the upstream's id of the conversation was not learnt: %+v", ld)
			}
		})
	}
}
