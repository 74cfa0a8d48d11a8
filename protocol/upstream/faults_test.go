package upstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// events splits an AgentSmithy body into its complete events' data and
// the trailing partial bytes.
func events(body []byte) (data []string, rest string) {
	s := string(body)
	for {
		i := strings.Index(s, "\r\n\r\n")
		if i < 0 {
			return data, s
		}
		data = append(data, strings.TrimPrefix(s[:i], "data: "))
		s = s[i+4:]
	}
}

func TestFaults(t *testing.T) {
	const msg = "rename total to sum in main.go"
	_, base := newTestServer(t, Options{})
	_, clean := chat(t, base, testDialog, msg)
	cleanEvents, _ := events(clean)

	for _, tc := range []struct {
		fault string
		check func(t *testing.T, res *http.Response, body []byte)
	}{
		{"http-500", func(t *testing.T, res *http.Response, body []byte) {
			if res.StatusCode != 500 || string(body) != "Internal Server Error" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
				t.Errorf("got %d %q", res.StatusCode, body)
			}
		}},
		{"http-429", func(t *testing.T, res *http.Response, body []byte) {
			if res.StatusCode != 429 || res.Header.Get("Retry-After") != "1" || string(body) != `{"detail":"Too Many Requests"}` {
				t.Errorf("got %d %q", res.StatusCode, body)
			}
		}},
		{"status=503", func(t *testing.T, res *http.Response, body []byte) {
			if res.StatusCode != 503 || string(body) != `{"detail":"Injected fault: HTTP 503"}` {
				t.Errorf("got %d %q", res.StatusCode, body)
			}
		}},
		{"not-sse", func(t *testing.T, res *http.Response, body []byte) {
			if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "<html>") {
				t.Errorf("got %d %s %q", res.StatusCode, res.Header.Get("Content-Type"), body)
			}
		}},
		{"cut-mid-event=3", func(t *testing.T, res *http.Response, body []byte) {
			evs, rest := events(body)
			if len(evs) != 3 || rest == "" || !strings.HasPrefix(rest, "data: {") || strings.HasSuffix(rest, "\n") {
				t.Errorf("want 3 events and a partial one, got %d events, rest %q", len(evs), rest)
			}
		}},
		{"cut-mid-event", func(t *testing.T, res *http.Response, body []byte) {
			evs, rest := events(body)
			if len(evs) != len(cleanEvents)/2 || rest == "" {
				t.Errorf("want %d events and a partial one, got %d, rest %q", len(cleanEvents)/2, len(evs), rest)
			}
		}},
		{"huge-event=1", func(t *testing.T, res *http.Response, body []byte) {
			evs, _ := events(body)
			if len(evs) != len(cleanEvents)+1 || len(evs[1]) < 1<<20 || !json.Valid([]byte(evs[1])) {
				t.Errorf("want a valid event above 1 MiB second, got %d events, second is %d bytes", len(evs), len(evs[1]))
			}
		}},
		{"invalid-json", func(t *testing.T, res *http.Response, body []byte) {
			evs, rest := events(body)
			if len(evs) != len(cleanEvents)+1 || json.Valid([]byte(evs[1])) || rest != "" {
				t.Errorf("want an invalid second event among %d, got %d; second %q", len(cleanEvents)+1, len(evs), evs[1])
			}
			for i, e := range evs {
				if i != 1 && !json.Valid([]byte(e)) {
					t.Errorf("event %d invalid too: %q", i, e)
				}
			}
		}},
		{"no-done", func(t *testing.T, res *http.Response, body []byte) {
			evs, rest := events(body)
			if len(evs) != len(cleanEvents)-1 || strings.Contains(string(body), `"done"`) || rest != "" {
				t.Errorf("want every event but done, got %d of %d", len(evs), len(cleanEvents))
			}
		}},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			_, base := newTestServer(t, Options{}) // fresh: v2 edits the workspace
			res, body := chat(t, base, testDialog, msg, FaultHeader, tc.fault)
			tc.check(t, res, body)
		})
	}
}

// TestFaultStallPauses: "stall" must pause the stream after its first
// event and then send every event. The pause is checked from below only
// (the gap after the first event is at least the stall), which a slow
// machine cannot make fail, and which fails when stalling does nothing.
func TestFaultStallPauses(t *testing.T) {
	t.Parallel()
	const stall = 300 * time.Millisecond
	_, base := newTestServer(t, Options{})
	_, clean := chat(t, base, testDialog, "rename total to sum in main.go")
	cleanEvents, _ := events(clean)

	_, base = newTestServer(t, Options{})
	body := `{"messages":[{"role":"user","content":"rename total to sum in main.go"}],"stream":true,"dialog_id":"` + testDialog + `"}`
	req, err := http.NewRequest(http.MethodPost, base+"/api/chat", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(FaultHeader, fmt.Sprintf("stall=%g", stall.Seconds()))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	// The arrival time of each event's end.
	var at []time.Time
	var got strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		got.Write(buf[:n])
		for strings.Count(got.String(), "\r\n\r\n") > len(at) {
			at = append(at, time.Now())
		}
		if err != nil {
			break
		}
	}
	evs, _ := events([]byte(got.String()))
	if len(evs) != len(cleanEvents) {
		t.Fatalf("stall lost events: %d, want %d", len(evs), len(cleanEvents))
	}
	if len(at) < 2 {
		t.Fatalf("only %d events", len(at))
	}
	// The server sleeps the whole stall between the two writes, but the
	// client can stamp the first event late (its read scheduled after a
	// delay) and the second at once, which shortens the gap it sees by
	// that delay: 299.6 ms for a 300 ms stall was seen under load. Half
	// the stall still tells a paused stream from one that did not pause.
	if gap := at[1].Sub(at[0]); gap < stall/2 {
		t.Errorf("the second event came %v after the first; a stall of %v did not pause the stream", gap, stall)
	}
}

// TestFaultsFromOptions applies to every request, in every dialect.
func TestFaultsFromOptions(t *testing.T) {
	for _, d := range []string{"oracle", "textbook", "rag"} {
		_, base := newTestServer(t, Options{Dialect: dialect(d), Faults: []Fault{{Name: "no-done"}}})
		for range 2 {
			_, body := do(t, "POST", base+"/api/chat", map[string]string{"message": "hello there"})
			last := strings.TrimSpace(string(body)[strings.LastIndex(strings.TrimSpace(string(body)), "\n")+1:])
			if strings.Contains(last, `"done"`) || d == "rag" && !strings.Contains(last, `"message"`) {
				t.Errorf("%s: last event %q", d, last)
			}
		}
	}
}

func TestParseFaults(t *testing.T) {
	fs, err := ParseFaults(" stall=2, no-done ,huge-event=0.5")
	if err != nil || len(fs) != 3 || fs[0] != (Fault{"stall", "2"}) || fs[2].String() != "huge-event=0.5" {
		t.Fatalf("ParseFaults = %v, %v", fs, err)
	}
	for _, bad := range []string{"explode", "stall=x", "no-done=1", "status", "status=42"} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("ParseFaults(%q) accepted", bad)
		}
	}
	if _, err := New(Options{Workspace: t.TempDir(), Faults: []Fault{{"stall", "x"}}}); err == nil {
		t.Errorf("New accepted a bad fault")
	}
}
