package acp_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/smith-dev/smith/protocol/upstream"
)

// threeFiles is a patch that deletes gone.txt and edits b.txt and c.txt:
// its undo, one group, writes the three files back through the client in
// one ApplyEdit: gone.txt created, then b.txt, then c.txt.
const threeFiles = `--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-gone 1
-gone 2
--- a/b.txt
+++ b/b.txt
@@ -1,2 +1,2 @@
-b1
+B1
 b2
--- a/c.txt
+++ b/c.txt
@@ -1,2 +1,2 @@
-c1
+C1
 c2
`

// TestFailedWriteTakesBackOnlyWhatSmithWrote: the client's fs/write_text_file
// fails on the last file of a multi-file write (the undo of a patch), after
// someone changed a file smith had written before it. That file is left as
// it is, byte for byte, and the answer names it; the others are put back
// (an edited file) or removed (a created one).
func TestFailedWriteTakesBackOnlyWhatSmithWrote(t *testing.T) {
	const typed = "typed by the user\n"
	for _, tt := range []struct {
		name    string
		touched string // the file changed before the failing write ("": none)
		noRead  bool   // the client declares fs.writeTextFile only
		// what the files hold at the end ("": absent)
		gone, b string
		said    []string
	}{
		{
			name: "a created file typed into", touched: "gone.txt",
			gone: typed, b: "B1\nb2\n",
			said: []string{"gone.txt changed since smith wrote it; left as it is", "b.txt was put back.", "Review the files left as they are"},
		},
		{
			name: "an edited file changed", touched: "b.txt",
			gone: "", b: typed,
			said: []string{"gone.txt was removed (smith had created it)", "b.txt changed since smith wrote it; left as it is", "Review the files left as they are"},
		},
		{
			// smith cannot read the buffer: it checks the disk, which
			// this client saves to.
			name: "an edited file changed, a client that cannot read", touched: "b.txt", noRead: true,
			gone: "", b: typed,
			said: []string{"gone.txt was removed (smith had created it)", "b.txt changed since smith wrote it; left as it is", "Review the files left as they are"},
		},
		{
			name: "nothing changed",
			gone: "", b: "B1\nb2\n",
			said: []string{"gone.txt was removed (smith had created it). ", "b.txt was put back."},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
			f.write(t, map[string]string{"gone.txt": "gone 1\ngone 2\n", "b.txt": "b1\nb2\n", "c.txt": "c1\nc2\n"})
			smithApply(t, f, threeFiles)

			c := &client{fs: true, save: true, noRead: tt.noRead}
			var mu sync.Mutex
			var order []string
			c.onWrite = func(p sdk.WriteTextFileRequest) error {
				mu.Lock()
				order = append(order, filepath.Base(p.Path))
				mu.Unlock()
				if filepath.Base(p.Path) != "c.txt" {
					return nil
				}
				if tt.touched != "" {
					if err := c.edit(filepath.Join(f.ws, tt.touched), typed); err != nil {
						t.Error(err)
					}
				}
				return errors.New("the disk is full")
			}
			p := start(t, f, c)
			sid := p.session(t, f)
			p.prompt(t, sid, "/undo")
			answer := agentText(c.updates())
			mu.Lock()
			defer mu.Unlock()
			if want := []string{"gone.txt", "b.txt", "c.txt"}; !slices.Equal(order[:min(3, len(order))], want) {
				t.Fatalf("fs/write_text_file went to %v, want %v first: the test does not test the roll back\n%s", order, want, answer)
			}
			for _, want := range append([]string{"/undo failed: the editor could not write the edit of ", "c.txt: the client answered: Internal error: the disk is full. The files smith had already written through the editor: "}, tt.said...) {
				if !strings.Contains(answer, want) {
					t.Errorf("the answer does not say %q:\n%s", want, answer)
				}
			}
			if strings.Contains(answer, "the buffer may have changed") {
				t.Errorf("the answer guesses at a changed buffer, although the write failed:\n%s", answer)
			}
			if strings.Contains(answer, f.ws) {
				t.Errorf("the answer names a file by its absolute path; smith names files relative to the workspace:\n%s", answer)
			}
			if tt.touched != "" {
				if got := strings.Count(answer, "left as it is"); got != 1 {
					t.Errorf("the answer says %d files are left as they are, want 1:\n%s", got, answer)
				}
			}
			for name, want := range map[string]string{"gone.txt": tt.gone, "b.txt": tt.b, "c.txt": "C1\nc2\n"} {
				got, err := os.ReadFile(filepath.Join(f.ws, name))
				switch {
				case want == "" && !errors.Is(err, os.ErrNotExist):
					t.Errorf("%s is on disk (%q, %v), want it removed", name, got, err)
				case want != "" && (err != nil || string(got) != want):
					t.Errorf("%s holds %q (%v), want %q", name, got, err, want)
				}
			}
			if tt.touched != "" {
				c.mu.Lock()
				buf := c.writes[filepath.Join(f.ws, tt.touched)]
				c.mu.Unlock()
				if buf != typed {
					t.Errorf("the editor's buffer of %s holds %q, want what the user typed", tt.touched, buf)
				}
				p.waitStderr(t, "left as the editor has it")
			}
		})
	}
}

// smithApply applies patch to f's workspace with `smith apply`, which
// journals it in f's state folder as one undo group.
func smithApply(t *testing.T, f *fixture, patch string) {
	t.Helper()
	cmd := exec.Command(smithBin, "apply", "-")
	cmd.Dir = f.ws
	cmd.Stdin = strings.NewReader(patch)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "SMITH_STATE_DIR="+f.state)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("smith apply: %v\n%s", err, out)
	}
}

// createEditDisk is threeFiles that also edits d.txt: its undo, one group,
// creates gone.txt and puts b.txt and c.txt back through the client (one
// ApplyEdit), and writes d.txt on disk when the client cannot read it.
const createEditDisk = threeFiles + `--- a/d.txt
+++ b/d.txt
@@ -1,2 +1,2 @@
-d1
+D1
 d2
`

// TestFailedDiskWriteTakesBackTheEditorsCreation: a batch writes a new
// file and two edits through the client, and then its disk write fails
// (another tool changed d.txt meanwhile). ACP cannot delete a file, so the
// engine cannot take the creation back through the client: the edits are
// put back through it, the created file is removed from the disk while it
// holds exactly what smith wrote, and the answer says what became of each
// file, naming any left. When the client fails the put-back of c.txt,
// b.txt is still put back and c.txt named as left.
func TestFailedDiskWriteTakesBackTheEditorsCreation(t *testing.T) {
	const typed = "typed by the user\n"
	const tool = "d changed by another tool\n"
	for _, tt := range []struct {
		name     string
		typed    bool   // the user types into gone.txt before the disk write
		unsaved  bool   // the client keeps its writes in buffers (no save)
		failBack bool   // the client fails the write that puts c.txt back
		c        string // what c.txt holds at the end, in the buffer and on disk ("": put back)
		// what gone.txt holds at the end, on disk and in the buffer ("": absent)
		disk, buffer string
		said         []string
	}{
		{
			name: "nothing changed",
			said: []string{"gone.txt was removed (smith had created it)", "b.txt was put back", "c.txt was put back"},
		},
		{
			name: "the created file typed into", typed: true,
			disk: typed, buffer: typed,
			said: []string{"gone.txt changed since smith wrote it; left as it is", "b.txt was put back", "Review the files left as they are"},
		},
		{
			name: "the created file not saved", unsaved: true,
			buffer: "gone 1\ngone 2\n",
			said:   []string{"gone.txt is not on disk (the editor holds it unsaved)", "left as it is", "b.txt was put back", "Review the files left as they are"},
		},
		{
			name: "the put-back fails", failBack: true,
			c:    "c1\nc2\n", // as smith's undo wrote it
			said: []string{"gone.txt was removed (smith had created it)", "b.txt was put back", "c.txt cannot be taken back (the editor's write failed: fs/write_text_file", "the disk is full", "left as it is", "Review the files left as they are"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
			f.write(t, map[string]string{"gone.txt": "gone 1\ngone 2\n", "b.txt": "b1\nb2\n", "c.txt": "c1\nc2\n", "d.txt": "d1\nd2\n"})
			smithApply(t, f, createEditDisk)
			gone, b, cPath, d := filepath.Join(f.ws, "gone.txt"), filepath.Join(f.ws, "b.txt"), filepath.Join(f.ws, "c.txt"), filepath.Join(f.ws, "d.txt")

			c := &client{fs: true, save: !tt.unsaved}
			c.onRead = func(p sdk.ReadTextFileRequest) error {
				if p.Path == d {
					return errors.New("not a text file the editor can open")
				}
				return nil
			}
			var mu sync.Mutex
			var order []string
			c.onWrite = func(p sdk.WriteTextFileRequest) error {
				mu.Lock()
				order = append(order, filepath.Base(p.Path))
				n := len(order)
				mu.Unlock()
				if p.Path == cPath && n == 5 && tt.failBack {
					return errors.New("the disk is full") // the put-back of c.txt
				}
				if p.Path != cPath || n != 3 {
					return nil
				}
				// The last write through the client: before smith's disk
				// write, another tool changes d.txt, and the user may type
				// into the file smith just created.
				if err := os.WriteFile(d, []byte(tool), 0o644); err != nil {
					t.Error(err)
				}
				if tt.typed {
					if err := c.edit(gone, typed); err != nil {
						t.Error(err)
					}
				}
				return nil
			}
			p := start(t, f, c)
			sid := p.session(t, f)
			p.prompt(t, sid, "/undo")
			answer := agentText(c.updates())
			mu.Lock()
			defer mu.Unlock()
			if want := []string{"gone.txt", "b.txt", "c.txt"}; !slices.Equal(order[:min(3, len(order))], want) {
				t.Fatalf("fs/write_text_file went to %v, want %v first: the test does not test the take-back\n%s", order, want, answer)
			}
			for _, want := range append([]string{"/undo failed: a file changed while smith was writing it", "d.txt"}, tt.said...) {
				if !strings.Contains(answer, want) {
					t.Errorf("the answer does not say %q:\n%s", want, answer)
				}
			}
			wantLeft := 0
			if tt.buffer != "" {
				wantLeft = 1 // gone.txt
			}
			if tt.failBack {
				wantLeft = 1 // c.txt
			}
			if strings.Contains(answer, f.ws) {
				t.Errorf("the answer names a file by its absolute path; smith names files relative to the workspace:\n%s", answer)
			}
			if left := strings.Count(answer, "left as it is"); left != wantLeft {
				t.Errorf("the answer says %d files are left as they are, want %d:\n%s", left, wantLeft, answer)
			}
			if (tt.buffer != "" || tt.failBack) && strings.Contains(answer, "a file changed while smith was writing it; nothing was written") {
				t.Errorf("the answer says nothing was written, although a file is left:\n%s", answer)
			}
			got, err := os.ReadFile(gone)
			switch {
			case tt.disk == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("gone.txt is on disk (%q, %v), want it removed", got, err)
			case tt.disk != "" && string(got) != tt.disk:
				t.Errorf("gone.txt holds %q (%v) on disk, want %q", got, err, tt.disk)
			}
			c.mu.Lock()
			bufB, bufC := c.writes[b], c.writes[cPath]
			bufGone, inBuf := c.writes[gone]
			c.mu.Unlock()
			wantC := "C1\nc2\n" // put back
			if tt.c != "" {
				wantC = tt.c
			}
			if bufB != "B1\nb2\n" || bufC != wantC {
				t.Errorf("the editor's buffers of b.txt and c.txt hold %q and %q, want %q and %q", bufB, bufC, "B1\nb2\n", wantC)
			}
			if tt.buffer != "" && bufGone != tt.buffer {
				t.Errorf("the editor's buffer of gone.txt holds %q (open %v), want %q", bufGone, inBuf, tt.buffer)
			}
			if !tt.unsaved {
				if got, gotC := f.read(t, "b.txt"), f.read(t, "c.txt"); got != "B1\nb2\n" || gotC != wantC {
					t.Errorf("b.txt and c.txt hold %q and %q on disk, want %q and %q", got, gotC, "B1\nb2\n", wantC)
				}
			}
			if got := f.read(t, "d.txt"); got != tool {
				t.Errorf("d.txt holds %q, want what the other tool wrote", got)
			}
		})
	}
}

// TestDamagedJournalAfterTheClientWroteNamesWhatIsLeft: the undo of a
// patch writes b.txt back through the client and big.txt (too large to
// hold, and one the client cannot read) on disk, whose text before the
// engine reads from its journal only while it writes it: the journal's
// copy is damaged, so the disk write fails after the client wrote b.txt.
// The answer says nothing was written on disk, not that nothing was
// written, and what became of b.txt: put back, or named as left when the
// client fails that write too.
func TestDamagedJournalAfterTheClientWroteNamesWhatIsLeft(t *testing.T) {
	var big strings.Builder
	for i := 0; big.Len() < 1200<<10; i++ {
		fmt.Fprintf(&big, "big line %d\n", i)
	}
	bigText := big.String()
	bigApplied := "BIG" + strings.TrimPrefix(bigText, "big")
	patch := "--- a/big.txt\n+++ b/big.txt\n@@ -1,2 +1,2 @@\n-big line 0\n+BIG line 0\n big line 1\n" +
		"--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n-b1\n+B1\n b2\n"
	for _, tt := range []struct {
		name     string
		failBack bool // the client fails the write that puts b.txt back
		b        string
		said     []string
	}{
		{name: "put back", b: "B1\nb2\n", said: []string{"b.txt was put back."}},
		{name: "the put-back fails", failBack: true, b: "b1\nb2\n", said: []string{"b.txt cannot be taken back", "left as it is", "Review the files left as they are"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, upstream.Options{Protocol: upstream.ProtocolV0})
			f.write(t, map[string]string{"big.txt": bigText, "b.txt": "b1\nb2\n"})
			smithApply(t, f, patch)
			damageJournalCopy(t, f.state, bigText)
			bigPath, b := filepath.Join(f.ws, "big.txt"), filepath.Join(f.ws, "b.txt")

			c := &client{fs: true, save: true}
			c.onRead = func(p sdk.ReadTextFileRequest) error {
				if p.Path == bigPath {
					return errors.New("too large for the editor")
				}
				return nil
			}
			var mu sync.Mutex
			writes := 0
			c.onWrite = func(p sdk.WriteTextFileRequest) error {
				mu.Lock()
				defer mu.Unlock()
				writes++
				if p.Path == b && writes == 2 && tt.failBack {
					return errors.New("the disk is full")
				}
				return nil
			}
			p := start(t, f, c)
			sid := p.session(t, f)
			p.prompt(t, sid, "/undo")
			answer := agentText(c.updates())
			mu.Lock()
			n := writes
			mu.Unlock()
			if n < 1 {
				t.Fatalf("nothing went through fs/write_text_file: the test does not test the take-back\n%s", answer)
			}
			for _, want := range append([]string{"/undo failed: cannot undo change", "big.txt", "damaged", "nothing was written on disk"}, tt.said...) {
				if !strings.Contains(answer, want) {
					t.Errorf("the answer does not say %q:\n%s", want, answer)
				}
			}
			if strings.Contains(answer, "; nothing was written.") {
				t.Errorf("the answer says nothing was written, although the client wrote b.txt:\n%s", answer)
			}
			if got := f.read(t, "big.txt"); got != bigApplied {
				t.Errorf("big.txt changed (%d bytes), want it as smith apply wrote it", len(got))
			}
			if got := f.read(t, "b.txt"); got != tt.b {
				t.Errorf("b.txt holds %q, want %q", got, tt.b)
			}
		})
	}
}

// damageJournalCopy changes one byte of the copy of text that smith's
// journal keeps in state (its blob packs hold texts as they are).
func damageJournalCopy(t *testing.T, state, text string) {
	t.Helper()
	found := false
	err := filepath.WalkDir(state, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || found {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		i := strings.Index(string(b), text)
		if i < 0 {
			return nil
		}
		found = true
		b[i+len(text)/2] ^= 1
		return os.WriteFile(path, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatal("smith's journal holds no copy of the text to damage")
	}
}
