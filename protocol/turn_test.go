package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

const d2 = `{"dialog_id": "d1", `

func v2(rest string) string { return "data: " + d2 + rest + "\r\n\r\n" }

func record(evs *[]Event) func(Event) {
	return func(e Event) { *evs = append(*evs, e) }
}

func TestReadTurnCancel(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	go io.WriteString(pw, v2(`"type": "chat", "content": "partial"}`)) // the stream then stays open
	var evs []Event
	sum := ReadTurn(ctx, pr, StreamOptions{TurnID: "t1"}, func(e Event) {
		evs = append(evs, e)
		if e.Type == KindText {
			cancel(errors.New("user pressed stop")) // only the cancel can end the turn now
		}
	})
	if sum.Outcome != OutcomeCancelled || sum.Text != "partial" {
		t.Fatalf("outcome %s, text %q; want cancelled with the partial text", sum.Outcome, sum.Text)
	}
	if r := evs[len(evs)-1].TurnEnd.Reason; r != "cancelled: user pressed stop" {
		t.Errorf("reason %q, want the cancel cause", r)
	}
	checkTurnInvariants(t, evs)
}

// Sequential: a cancel is seen at the next read of the body; the events
// read before it are kept, and the body is not read to its end.
func TestReadTurnSequentialCancel(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	in := v2(`"type": "chat", "content": "partial"}`) + strings.Repeat(v2(`"type": "chat", "content": "more"}`), 5000) + v2(`"type": "done"}`)
	body := &randomChunks{s: in, rng: rand.New(rand.NewPCG(1, 2))}
	var evs []Event
	sum := ReadTurn(ctx, body, StreamOptions{TurnID: "t1", Sequential: true}, func(e Event) {
		evs = append(evs, e)
		if e.Type == KindText {
			cancel(errors.New("user pressed stop"))
		}
	})
	if sum.Outcome != OutcomeCancelled || !strings.HasPrefix(sum.Text, "partial") || len(sum.Text) > 1000 {
		t.Fatalf("outcome %s, %d bytes of text; want cancelled soon after the partial text", sum.Outcome, len(sum.Text))
	}
	if r := evs[len(evs)-1].TurnEnd.Reason; r != "cancelled: user pressed stop" {
		t.Errorf("reason %q, want the cancel cause", r)
	}
	checkTurnInvariants(t, evs)
}

// Sequential, a body the client closed on purpose (its idle watchdog): the
// turn ends with that cause, as in the segmented reading, even when the
// close cut a line.
func TestReadTurnSequentialStopped(t *testing.T) {
	in := v2(`"type": "chat", "content": "then silence"}`) + "data: {\"half"
	for _, seq := range []bool{false, true} {
		body := io.MultiReader(strings.NewReader(in), iotest.ErrReader(fmt.Errorf("closing: %w", ErrIdleTimeout)))
		var evs []Event
		sum := ReadTurn(context.Background(), body, StreamOptions{TurnID: "t1", IdleTimeout: -1, Sequential: seq}, record(&evs))
		if sum.Outcome != OutcomeInterrupted || sum.Text != "then silence" {
			t.Fatalf("sequential %v: outcome %s, text %q; want interrupted with the text", seq, sum.Outcome, sum.Text)
		}
		if r := evs[len(evs)-1].TurnEnd.Reason; r != "closing: "+ErrIdleTimeout.Error() {
			t.Errorf("sequential %v: reason %q, want the idle timeout as the client gave it", seq, r)
		}
	}
}

func TestReadTurnIdleTimeout(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go io.WriteString(pw, v2(`"type": "chat", "content": "then silence"}`)+": ping\r\n")
	var evs []Event
	sum := ReadTurn(context.Background(), pr, StreamOptions{TurnID: "t1", IdleTimeout: 20 * time.Millisecond}, record(&evs))
	if sum.Outcome != OutcomeInterrupted || sum.Text != "then silence" {
		t.Fatalf("outcome %s, text %q; want interrupted with the text", sum.Outcome, sum.Text)
	}
	if end := evs[len(evs)-1].TurnEnd; !strings.Contains(end.Reason, "idle timeout") {
		t.Errorf("reason %q does not name the idle timeout", end.Reason)
	}
	checkTurnInvariants(t, evs)
}

func TestReadTurnEventTooLarge(t *testing.T) {
	in := v2(`"type": "chat", "content": "ok"}`) + v2(`"type": "chat", "content": "`+strings.Repeat("x", 300)+`"}`)
	var evs []Event
	sum := ReadTurn(context.Background(), strings.NewReader(in), StreamOptions{TurnID: "t1", MaxEventSize: 200}, record(&evs))
	if sum.Outcome != OutcomeError || len(sum.Errors) != 1 || sum.Errors[0].Code != "event_too_large" {
		t.Fatalf("outcome %s, errors %v; want an event_too_large error", sum.Outcome, sum.Errors)
	}
	if !strings.Contains(sum.Errors[0].Message, "200-byte limit") {
		t.Errorf("message %q does not say the limit", sum.Errors[0].Message)
	}
	checkTurnInvariants(t, evs)
}

// TestReadTurnHTTP reads real SSE over loopback: a complete turn, and one
// whose connection dies in the middle of a JSON line.
func TestReadTurnHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := v2(`"type": "user", "content": "hi"}`) + ": ping - 2025-12-29 11:20:15.482913+00:00\r\n\r\n" +
			v2(`"type": "chat", "content": "Hel"}`) + v2(`"type": "chat", "content": "lo"}`)
		if r.URL.Path == "/cut" {
			body += `data: {"dialog_id": "d1", "type": "chat", "con`
			w.Header().Set("Content-Length", fmt.Sprint(len(body)+100)) // the body ends short: the client sees io.ErrUnexpectedEOF
		} else {
			body += v2(`"type": "done", "done": true}`)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, part := range strings.SplitAfter(body, "\r\n\r\n") {
			io.WriteString(w, part)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	for path, want := range map[string]Outcome{"/ok": OutcomeCompleted, "/cut": OutcomeInterrupted} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var evs []Event
		sum := ReadTurn(context.Background(), res.Body, StreamOptions{TurnID: "t1"}, record(&evs))
		res.Body.Close()
		if sum.Outcome != want || sum.Text != "Hello" || sum.DialogID != "d1" || *sum.Protocol != "v2" {
			t.Errorf("%s: outcome %s, text %q, dialog %q; want %s, Hello, d1", path, sum.Outcome, sum.Text, sum.DialogID, want)
		}
		checkTurnInvariants(t, evs)
	}
}

func TestDetect(t *testing.T) {
	cases := []struct {
		payload string
		want    Dialect
	}{
		{`{"dialog_id": "d", "type": "user", "content": "x"}`, DialectAgentSmithy},
		{`{"content": "v0 text"}`, DialectAgentSmithy},
		{`{"done": true}`, DialectAgentSmithy},
		{`{"type": "classification", "task_type": "refactor"}`, DialectAgentSmithy},
		{`{"type": "tool_call", "name": "read_file", "args": {}}`, DialectAgentSmithy},
		{`{"type": "status", "message": ""}`, DialectRAG},
		{`{"message": {"content": "x"}}`, DialectRAG},
		{`{"error": "x", "details": "y"}`, DialectRAG},
		{`{"type": "delta", "content": "x"}`, DialectTextbook},
		{`{"type": "error", "message": "x", "code": "timeout"}`, DialectTextbook},
		{`{"type": "done", "citations": []}`, DialectTextbook},
		{`{"type": "session_start", "sessionId": "s"}`, DialectLifecycle},
		{`{"type": "error", "message_id": null, "code": "X", "message": "m"}`, DialectLifecycle},
		{`{"type": "status", "status": "thinking", "message": "Thinking..."}`, DialectLifecycle},
		{`{"type": "thinking", "content": "x"}`, DialectOracle},
		{`{"type": "tool_call", "tool_call": {"id": "1", "name": "n"}}`, DialectOracle},
		{`{"type": "done", "tokens_used": 3}`, DialectOracle},
		{`{"type": "done"}`, DialectAuto},
		{`{"type": "error", "error": "x"}`, DialectAuto},
	}
	for _, tc := range cases {
		var p payload
		if err := p.parse(tc.payload); err != nil {
			t.Fatal(err)
		}
		if got := detect(&p); got != tc.want {
			t.Errorf("detect(%s) = %q, want %q", tc.payload, got, tc.want)
		}
	}
}

// An explicit dialect always wins: an AgentSmithy stream read as textbook
// maps only what fits textbook: "chat" is a violation, "done" (a textbook
// type as well) ends the turn.
func TestExplicitDialectWins(t *testing.T) {
	in := v2(`"type": "chat", "content": "x"}`) + v2(`"type": "done", "done": true}`)
	sum := ReadTurn(context.Background(), strings.NewReader(in), StreamOptions{Dialect: DialectTextbook}, nil)
	if sum.Dialect != DialectTextbook || sum.Outcome != OutcomeCompleted || len(sum.Violations) != 1 {
		t.Fatalf("dialect %s, outcome %s, violations %v", sum.Dialect, sum.Outcome, sum.Violations)
	}
	if sum.Violations[0].Kind != ViolationUnknownType {
		t.Errorf("violation %+v, want unknown_type", sum.Violations[0])
	}
}

// TestTurnPiecesOnSessionStream drives two turns over one lifecycle
// session stream with the exported pieces, as the chat client does.
func TestTurnPiecesOnSessionStream(t *testing.T) {
	L := func(s string) string { return "data: " + s + "\n\n" }
	stream := L(`{"type":"session_start","sessionId":"s1"}`) +
		L(`{"type":"message_start","message_id":"m1"}`) + L(`{"type":"text","message_id":"m1","content":"one"}`) + L(`{"type":"message_end","message_id":"m1"}`) +
		": keepalive\n\n" +
		L(`{"type":"message_start","message_id":"m2"}`) + L(`{"type":"text","message_id":"m2","content":"two"}`) + L(`{"type":"message_end","message_id":"m2"}`)
	r := NewSSEReader(strings.NewReader(stream), 0)
	var texts []string
	for turn := 1; turn <= 2; turn++ {
		tr := NewTurn(StreamOptions{Dialect: DialectLifecycle, TurnID: fmt.Sprint("t", turn)})
		var evs []Event
		var cause error
		for !tr.Done() {
			ev, err := r.Next()
			if err != nil {
				cause = err
				break
			}
			tr.Feed(ev, func(e Event) { evs = append(evs, e) })
		}
		sum := tr.Finish(cause, func(e Event) { evs = append(evs, e) })
		if sum.Outcome != OutcomeCompleted || len(sum.Violations) != 0 {
			t.Fatalf("turn %d: outcome %s, violations %v", turn, sum.Outcome, sum.Violations)
		}
		if again := tr.Finish(nil, func(Event) { t.Error("second Finish emitted") }); again != sum {
			t.Error("Finish is not idempotent")
		}
		texts = append(texts, sum.Text)
	}
	if diff := cmp.Diff([]string{"one", "two"}, texts); diff != "" {
		t.Error(diff)
	}
}

func TestDialogIDFromOptionsAndChanges(t *testing.T) {
	in := v2(`"type": "chat", "content": "x"}`) + "data: {\"dialog_id\": \"other\", \"type\": \"done\", \"done\": true}\r\n\r\n"
	var evs []Event
	sum := ReadTurn(context.Background(), strings.NewReader(in), StreamOptions{DialogID: "mine", TurnID: "t1"}, record(&evs))
	for _, e := range evs {
		if e.DialogID != "mine" {
			t.Errorf("event %d has dialog %q, want the one from the options", e.Seq, e.DialogID)
		}
	}
	if sum.DialogID != "mine" || len(sum.Violations) != 0 {
		t.Errorf("summary dialog %q, violations %v", sum.DialogID, sum.Violations)
	}
	// Without options, a dialog_id that changes within the turn is a violation.
	sum = ReadTurn(context.Background(), strings.NewReader(in), StreamOptions{}, nil)
	if sum.DialogID != "d1" || len(sum.Violations) != 1 || sum.Violations[0].Kind != ViolationDialogID {
		t.Errorf("summary dialog %q, violations %v", sum.DialogID, sum.Violations)
	}
}

// FuzzNormalizer feeds arbitrary bytes through the whole upstream path:
// whatever comes in, a turn has Seq 1..n and exactly one turnEnd, last.
func FuzzNormalizer(f *testing.F) {
	for _, s := range []string{
		v2(`"type": "chat", "content": "x"}`) + v2(`"type": "done", "done": true}`),
		"data: {\"content\": \"a\"}\n\ndata: {\"error\": \"b\"}\n\n",
		"data: {\"type\":\"message_start\",\"message_id\":\"m\"}\n\ndata: {\"type\":\"message_end\",\"message_id\":\"m\"}\n\n",
		"data: {\"message\":{\"content\":\"x\"}}\n\ndata: {\"message\":",
		"data: {\"type\":\"tool_result\",\"tool_call_id\":\"c\",\"tool_result\":{\"path\":\"a\",\"diff\":\"@@ -1 +1 @@\\n-a\\n+b\\n\"}}\n\n",
	} {
		f.Add(s, uint8(0))
	}
	dialects := []Dialect{DialectAuto, DialectAgentSmithy, DialectRAG, DialectTextbook, DialectLifecycle, DialectOracle}
	f.Fuzz(func(t *testing.T, in string, d uint8) {
		var evs []Event
		opts := StreamOptions{TurnID: "t1", IdleTimeout: -1, Dialect: dialects[int(d)%len(dialects)]}
		sum := ReadTurn(context.Background(), strings.NewReader(in), opts, record(&evs))
		checkTurnInvariants(t, evs)
		// ReadTurn cuts the body into segments framed by go-sse parsers of
		// their own, where the reads end: whole or in small random reads,
		// it must give what the reader driven directly gives.
		devs, dsum := readDirect(in, opts)
		if !cmp.Equal(devs, evs) || !cmp.Equal(dsum, sum) {
			t.Fatalf("ReadTurn differs from the reader driven directly: events %s\nsummary %s", cmp.Diff(devs, evs), cmp.Diff(dsum, sum))
		}
		var cevs []Event
		csum := ReadTurn(context.Background(), &randomChunks{s: in, rng: rand.New(rand.NewPCG(uint64(d), 5))}, opts, record(&cevs))
		if !cmp.Equal(devs, cevs) || !cmp.Equal(dsum, csum) {
			t.Fatalf("ReadTurn in small reads differs from the reader driven directly: events %s\nsummary %s", cmp.Diff(devs, cevs), cmp.Diff(dsum, csum))
		}
		// Sequentially (replay's way), whole and in small reads.
		sopts := opts
		sopts.Sequential = true
		for _, body := range []io.Reader{strings.NewReader(in), &randomChunks{s: in, rng: rand.New(rand.NewPCG(uint64(d), 7))}} {
			var sevs []Event
			ssum := ReadTurn(context.Background(), body, sopts, record(&sevs))
			if !cmp.Equal(devs, sevs) || !cmp.Equal(dsum, ssum) {
				t.Fatalf("ReadTurn, sequential, differs from the reader driven directly: events %s\nsummary %s", cmp.Diff(devs, sevs), cmp.Diff(dsum, ssum))
			}
		}
		if sum.Outcome == "" || evs[len(evs)-1].TurnEnd.Outcome != sum.Outcome {
			t.Fatalf("summary outcome %q", sum.Outcome)
		}
		if _, err := json.Marshal(evs); err != nil {
			t.Fatalf("events do not marshal: %v", err)
		}
	})
}

// FuzzPayload checks the payload scanner against encoding/json: the same
// verdict on validity, and the same decoded string members (of decoded,
// hence valid UTF-8, text: encoding/json would replace invalid bytes).
func FuzzPayload(f *testing.F) {
	for _, s := range []string{`{"a": "b\n\u00e9\ud83d\ude80", "n": -1.5e3, "o": {"x": [true, null]}}`, `[1]`, `{"a":}`, `{"a": "\ud800"}`, `"s"`, `{} x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = decodeUTF8(s) // payloads are always decoded before parsing
		var p payload
		err := p.parse(s)
		valid := json.Valid([]byte(s))
		if valid != (err == nil || errors.Is(err, errNotObject)) {
			t.Fatalf("parse(%q) = %v, json.Valid = %v", s, err, valid)
		}
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &m) != nil {
			t.Fatalf("encoding/json rejects %q", s)
		}
		for i := range p.members {
			mem := &p.members[i]
			if _, ok := m[p.key(mem)]; !ok {
				t.Fatalf("member name %q not among encoding/json's %v", p.key(mem), m)
			}
			v := p.val(mem)
			if jsonKind(v) != 's' {
				continue
			}
			var want string
			json.Unmarshal([]byte(v), &want)
			if got := unquote(v); got != want {
				t.Fatalf("unquote(%s) = %q, want %q", v, got, want)
			}
		}
	})
}

// feedAll reads a stream through the Turn pieces, with or without the
// adapters' fast paths.
func feedAll(t *testing.T, in string, noFast bool) []Event {
	t.Helper()
	var evs []Event
	tr := NewTurn(StreamOptions{TurnID: "t1"})
	tr.noFast = noFast
	r := NewSSEReader(strings.NewReader(in), 0)
	var err error
	for {
		var ev SSEEvent
		if ev, err = r.Next(); err != nil {
			break
		}
		tr.Feed(ev, record(&evs))
	}
	tr.Finish(err, record(&evs))
	return evs
}

// TestFastPathMatches: the fast path gives exactly the general path's events.
func TestFastPathMatches(t *testing.T) {
	inputs := map[string]string{"bench stream": string(v2Stream(3000))}
	files, _ := filepath.Glob(filepath.Join("testdata", "agentsmithy", "*.sse"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[f] = string(b)
	}
	for name, in := range inputs {
		if diff := cmp.Diff(feedAll(t, in, true), feedAll(t, in, false)); diff != "" {
			t.Errorf("%s: fast path differs (-general +fast):\n%s", name, diff)
		}
	}
}

func FuzzFastPath(f *testing.F) {
	for _, s := range []string{"plain", `with "quote`, `back\slash`, "tab\there", "ünï 😀", `\n`, ""} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, content string, reasoning bool) {
		typ := "chat"
		if reasoning {
			typ = "reasoning"
		}
		in := v2(`"type": "user", "content": "go"}`) +
			"data: " + `{"dialog_id": "d1", "type": "` + typ + `", "content": "` + content + `"}` + "\r\n\r\n" +
			v2(`"type": "done", "done": true}`)
		if diff := cmp.Diff(feedAll(t, in, true), feedAll(t, in, false)); diff != "" {
			t.Fatalf("fast path differs (-general +fast):\n%s", diff)
		}
	})
}

// TestReadTurnAfterTerminal: an upstream that sends one more event after
// done and then keeps the body open. The late event is a violation before
// the turnEnd, and ReadTurn returns after the grace, not at the idle
// timeout, with the outcome done gave.
func TestReadTurnAfterTerminal(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go io.WriteString(pw, v2(`"type": "chat", "content": "x"}`)+v2(`"type": "done", "done": true}`)+v2(`"type": "chat", "content": "late"}`))
	var evs []Event
	sum := ReadTurn(context.Background(), pr, StreamOptions{TurnID: "t1", IdleTimeout: time.Hour}, record(&evs))
	if sum.Outcome != OutcomeCompleted || sum.Text != "x" || len(sum.Violations) != 1 || sum.Violations[0].Kind != ViolationAfterTerminal {
		t.Fatalf("outcome %s, text %q, violations %v", sum.Outcome, sum.Text, sum.Violations)
	}
	checkTurnInvariants(t, evs)
}

// FuzzUnquoteShort holds the one-pass decoder of the fast path to
// encoding/json: whenever it decodes, encoding/json accepts the string and
// decodes it the same; and it declines only strings with a \u escape or
// that are not a JSON string's inside (which the scanner then decides).
func FuzzUnquoteShort(f *testing.F) {
	for _, s := range []string{`line with \"quotes\"\n`, `a\\`, `a\`, `\/\b\f\n\r\t`, `\u00e9`, `\x`, "tab\there", `"`, `é✓ \\u2028`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		body = decodeUTF8(body) // content is always decoded before parsing
		got, ok := unquoteShort(body)
		var want string
		err := json.Unmarshal([]byte(`"`+body+`"`), &want)
		if ok {
			if err != nil {
				t.Fatalf("unquoteShort(%q) = %q, but encoding/json rejects it: %v", body, got, err)
			}
			if got != want {
				t.Fatalf("unquoteShort(%q) = %q, encoding/json %q", body, got, want)
			}
			return
		}
		if err == nil && !strings.Contains(body, `\u`) {
			t.Fatalf("unquoteShort(%q) declined a string without \\u escapes", body)
		}
	})
}
