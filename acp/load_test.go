package acp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/smith-dev/smith/acp"
	"github.com/smith-dev/smith/daemon"
)

// TestLongHistoryLoadsInOrderAndLinearly: session/load reads a dialog's
// history page by page, newest page first. A dialog eight times as long
// must cost about eight times the memory to read, not sixty-four (each page
// put in front of all the pages read so far copied the whole history
// again: quadratic in the dialog's length), and every message comes back
// once, oldest first.
//
// The upstream is the embedded one in its own process (smith upstream),
// so that the bytes counted are this process's: the reading of the pages.
func TestLongHistoryLoadsInOrderAndLinearly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two long dialogs")
	}
	ws := t.TempDir()
	up := exec.Command(smithBin, "upstream", "--workspace", ws, "--addr", "127.0.0.1:0", "--delay", "0")
	out, err := up.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	up.Stderr = io.Discard
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Process.Kill(); up.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("smith upstream printed no URL: %v", err)
	}
	base := strings.TrimSpace(line)
	go io.Copy(io.Discard, out)

	ctx := context.Background()
	eng, err := daemon.New(ctx, daemon.Config{Workspace: ws, Upstream: base, StateDir: t.TempDir(), NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })

	// Turns of a user message and an answer: 5 and 40 pages of 100
	// messages. Decoding a page costs more than copying it, so it takes
	// this many pages for the copies to show.
	const short, long = 250, 2000
	fill := func(turns int) string {
		t.Helper()
		res, err := http.Post(base+"/api/dialogs", "application/json", strings.NewReader(`{"set_current": false}`))
		if err != nil {
			t.Fatal(err)
		}
		var d struct{ ID string }
		err = json.NewDecoder(res.Body).Decode(&d)
		res.Body.Close()
		if err != nil || d.ID == "" {
			t.Fatalf("create a dialog: %s, %v", res.Status, err)
		}
		id := d.ID
		for i := range turns {
			body, _ := json.Marshal(map[string]any{"dialog_id": id, "stream": true,
				"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("question %d", i)}}})
			res, err := http.Post(base+"/api/chat", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("chat %d in %s: %s", i, id, res.Status)
			}
		}
		return id
	}
	shortID, longID := fill(short), fill(long)

	read := func(id string, turns int) uint64 {
		t.Helper()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		events, err := acp.History(ctx, eng, id)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		var users []string
		for _, ev := range events {
			if ev.Type == "user" {
				users = append(users, ev.Content)
			}
		}
		if len(users) != turns {
			t.Fatalf("dialog %s: %d user messages read back, want %d", id, len(users), turns)
		}
		for i, u := range users {
			if want := fmt.Sprintf("question %d", i); u != want {
				t.Fatalf("dialog %s: user message %d is %q, want %q (out of order or repeated)", id, i, u, want)
			}
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	read(shortID, short) // warm up the connection
	a, b := read(shortID, short), read(longID, long)
	t.Logf("bytes allocated reading the history: %d turns %d, %d turns %d (ratio %.1f)", short, a, long, b, float64(b)/float64(a))
	if b > 12*a {
		t.Errorf("reading a dialog 8 times as long allocated %.1f times the bytes (%d against %d): not linear in the dialog's length", float64(b)/float64(a), b, a)
	}
}
