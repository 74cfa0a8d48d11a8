package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testWait bounds waits for something the test server must see; it is a
// guard against hanging, never a timing assertion.
const testWait = 10 * time.Second

// recorded is one request as the test server saw it.
type recorded struct {
	Method, Path string
	Header       http.Header
	Body         string
}

// sseServer answers every request with the given SSE frames (raw bytes,
// flushed one by one) and records the requests.
func sseServer(t *testing.T, header http.Header, frames ...string) (*httptest.Server, chan recorded) {
	t.Helper()
	reqs := make(chan recorded, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		reqs <- recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(b)}
		for k, vs := range header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		for _, f := range frames {
			io.WriteString(w, f)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, reqs
}

// collect returns an emit func and the events it saw.
func collect() (func(Event), *[]Event) {
	var evs []Event
	return func(e Event) { evs = append(evs, e) }, &evs
}

// checkOneTurnEnd fails unless evs has exactly one turnEnd, last, with want.
func checkOneTurnEnd(t *testing.T, evs []Event, want Outcome) {
	t.Helper()
	n := 0
	for _, e := range evs {
		if e.Type == KindTurnEnd {
			n++
		}
	}
	if n != 1 || len(evs) == 0 || evs[len(evs)-1].Type != KindTurnEnd {
		t.Fatalf("want exactly one turnEnd, last; got %d in %s", n, kinds(evs))
	}
	if got := evs[len(evs)-1].TurnEnd.Outcome; got != want {
		t.Fatalf("outcome = %s (%s), want %s", got, evs[len(evs)-1].TurnEnd.Reason, want)
	}
}

func kinds(evs []Event) string {
	var ks []string
	for _, e := range evs {
		ks = append(ks, string(e.Type))
	}
	return "[" + strings.Join(ks, " ") + "]"
}

func TestChatRequestBodies(t *testing.T) {
	req := ChatRequest{
		DialogID: "d1",
		TurnID:   "t1",
		Message:  "refactor this",
		Context:  &ChatContext{CurrentFile: &CurrentFile{Path: "/w/a.py", Language: "python", Content: "x = 1\n", Selection: "x"}},
		History:  []HistoryMessage{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}},
	}
	agentSmithy := `{"messages": [{"role": "user", "content": "refactor this"}],
		"context": {"current_file": {"path": "/w/a.py", "language": "python", "content": "x = 1\n", "selection": "x"}},
		"stream": true, "dialog_id": "d1"}`
	history := `[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]`
	tests := []struct {
		name   string
		cfg    ClientConfig
		req    ChatRequest
		stream string
		body   string
		path   string
	}{
		{name: "auto sends AgentSmithy's body", cfg: ClientConfig{}, req: req,
			stream: "data: {\"dialog_id\": \"d1\", \"type\": \"done\", \"done\": true}\r\n\r\n", body: agentSmithy},
		{name: "agentsmithy", cfg: ClientConfig{Dialect: DialectAgentSmithy}, req: req,
			stream: "data: {\"dialog_id\": \"d1\", \"type\": \"done\", \"done\": true}\r\n\r\n", body: agentSmithy},
		{name: "agentsmithy without context or dialog", cfg: ClientConfig{Dialect: DialectAgentSmithy}, req: ChatRequest{Message: "hi"},
			stream: "data: {\"dialog_id\": \"new\", \"type\": \"done\", \"done\": true}\r\n\r\n",
			body:   `{"messages": [{"role": "user", "content": "hi"}], "stream": true}`},
		{name: "agentsmithy with extra body and a custom path", cfg: ClientConfig{Dialect: DialectAgentSmithy, ChatPath: "/v2/chat", ExtraBody: map[string]any{"workload": "fast", "stream": nil}},
			req: ChatRequest{Message: "hi"}, path: "/v2/chat",
			stream: "data: {\"type\": \"done\", \"done\": true}\n\n",
			body:   `{"messages": [{"role": "user", "content": "hi"}], "workload": "fast"}`},
		{name: "textbook", cfg: ClientConfig{Dialect: DialectTextbook}, req: req,
			stream: "data: {\"type\": \"done\", \"citations\": []}\n\n",
			body:   `{"message": "refactor this", "conversation_history": ` + history + `}`},
		{name: "textbook with no history sends an empty one", cfg: ClientConfig{Dialect: DialectTextbook}, req: ChatRequest{Message: "q"},
			stream: "data: {\"type\": \"done\", \"citations\": []}\n\n",
			body:   `{"message": "q", "conversation_history": []}`},
		{name: "rag", cfg: ClientConfig{Dialect: DialectRAG}, req: req,
			stream: "data: {\"type\": \"status\", \"message\": \"\"}\n\ndata: {\"message\": {\"content\": \"ok\"}}\n\n",
			body:   `{"message": "refactor this", "conversation_history": ` + history + `}`},
		{name: "oracle", cfg: ClientConfig{Dialect: DialectOracle}, req: req,
			stream: "data: {\"type\": \"done\", \"context_id\": \"d1\"}\n\n",
			body:   `{"message": "refactor this", "conversation_history": ` + history + `, "context_id": "d1"}`},
		{name: "oracle with renamed fields", cfg: ClientConfig{Dialect: DialectOracle, Fields: BodyFields{Message: "query", History: "-", DialogID: "conversation"}}, req: req,
			stream: "data: {\"type\": \"done\"}\n\n",
			body:   `{"query": "refactor this", "conversation": "d1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, reqs := sseServer(t, nil, tt.stream)
			cfg := tt.cfg
			cfg.BaseURL = srv.URL
			cfg.Token = "tok"
			cfg.Header = http.Header{"X-Smith-Test": {"1"}}
			emit, evs := collect()
			sum, err := NewClient(cfg).Chat(context.Background(), tt.req, emit)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			checkOneTurnEnd(t, *evs, OutcomeCompleted)
			if sum.Outcome != OutcomeCompleted {
				t.Errorf("summary outcome = %s", sum.Outcome)
			}
			got := <-reqs
			wantPath := tt.path
			if wantPath == "" {
				wantPath = "/api/chat"
			}
			if got.Method != "POST" || got.Path != wantPath {
				t.Errorf("request = %s %s, want POST %s", got.Method, got.Path, wantPath)
			}
			for h, want := range map[string]string{
				"Content-Type": "application/json", "Accept": "text/event-stream", "Cache-Control": "no-cache",
				"Authorization": "Bearer tok", "X-Smith-Test": "1",
			} {
				if v := got.Header.Get(h); v != want {
					t.Errorf("header %s = %q, want %q", h, v, want)
				}
			}
			if diff := cmp.Diff(jsonValue(t, tt.body), jsonValue(t, got.Body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChatKeepsServerTiming(t *testing.T) {
	srv, _ := sseServer(t, http.Header{"Server-Timing": {"embed;dur=18.2, search;dur=0.4, total;dur=18.9"}},
		"data: {\"type\": \"status\", \"message\": \"\"}\n\n", "data: {\"message\": {\"content\": \"Hi\"}}\n\n")
	sum, err := NewClient(ClientConfig{BaseURL: srv.URL, Dialect: DialectRAG}).Chat(context.Background(), ChatRequest{Message: "q"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.ServerTiming != "embed;dur=18.2, search;dur=0.4, total;dur=18.9" || sum.Text != "Hi" {
		t.Errorf("summary: serverTiming %q, text %q", sum.ServerTiming, sum.Text)
	}
}

// failingChat runs one Chat expected to fail before the stream and checks
// the common contract: error event + turnEnd{error}, summary outcome error,
// and the returned error.
func failingChat(t *testing.T, cfg ClientConfig, code string) error {
	t.Helper()
	emit, evs := collect()
	sum, err := NewClient(cfg).Chat(context.Background(), ChatRequest{Message: "hi", DialogID: "d", TurnID: "t"}, emit)
	if err == nil {
		t.Fatalf("Chat succeeded; events %s", kinds(*evs))
	}
	checkOneTurnEnd(t, *evs, OutcomeError)
	if len(*evs) != 2 || (*evs)[0].Type != KindError {
		t.Fatalf("events = %s, want [error turnEnd]", kinds(*evs))
	}
	e := (*evs)[0]
	if e.Error.Code != code || e.Error.Message != err.Error() || e.DialogID != "d" || e.TurnID != "t" {
		t.Errorf("error event = %+v (dialog %q turn %q), want code %q and the returned error's text", e.Error, e.DialogID, e.TurnID, code)
	}
	if sum.Outcome != OutcomeError || len(sum.Errors) != 1 || sum.Errors[0].Code != code {
		t.Errorf("summary = %+v", sum)
	}
	return err
}

func TestChatHTTPErrorQuotesAtMost2KiB(t *testing.T) {
	long := `{"detail": "` + strings.Repeat("é", 3000) + `"}` // 6 KB, multi-byte runes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, long)
	}))
	defer srv.Close()
	err := failingChat(t, ClientConfig{BaseURL: srv.URL}, "http_500")
	var he *HTTPError
	if !errors.As(err, &he) {
		t.Fatalf("err = %T %v, want *HTTPError", err, err)
	}
	if he.Status != 500 || he.URL != srv.URL+"/api/chat" || !he.Truncated {
		t.Errorf("HTTPError = status %d url %q truncated %v", he.Status, he.URL, he.Truncated)
	}
	if len(he.Body) > MaxErrorBody || len(he.Body) < MaxErrorBody-3 || !strings.HasPrefix(long, he.Body) {
		t.Errorf("quoted body is %d bytes, want a prefix of at most %d", len(he.Body), MaxErrorBody)
	}
	if !strings.Contains(err.Error(), srv.URL+"/api/chat") || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "(truncated)") {
		t.Errorf("message %q should name the URL, the status and the truncation", err)
	}
}

func TestChatWrongContentType(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"content": "not streamed", "done": true}`)
	}))
	defer srv.Close()
	err := failingChat(t, ClientConfig{BaseURL: srv.URL}, "content_type")
	var ce *ContentTypeError
	if !errors.As(err, &ce) || ce.ContentType != "application/json" || !strings.Contains(ce.Body, "not streamed") {
		t.Fatalf("err = %#v, want *ContentTypeError quoting the body", err)
	}
}

func TestChatRefusedConnection(t *testing.T) {
	err := failingChat(t, ClientConfig{BaseURL: closedURL(t)}, "unreachable")
	var ue *UnreachableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnreachable) || !strings.HasSuffix(ue.URL, "/api/chat") {
		t.Fatalf("err = %#v, want *UnreachableError for the chat URL", err)
	}
}

func TestChatTLSFailure(t *testing.T) {
	reached := make(chan struct{}, 4)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"type\": \"done\", \"done\": true}\n\n")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	defer srv.Close()
	// A client that does not trust the test server's certificate.
	err := failingChat(t, ClientConfig{BaseURL: srv.URL, HTTPClient: &http.Client{}}, "tls")
	var te *TLSError
	if !errors.As(err, &te) || !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("err = %T %v, want *TLSError naming the URL, matching ErrUnreachable", err, err)
	}
	if len(reached) != 0 {
		t.Fatal("the request reached the handler through an untrusted certificate")
	}
	// The same server with a client that trusts it: the turn completes.
	sum, err := NewClient(ClientConfig{BaseURL: srv.URL, HTTPClient: srv.Client()}).Chat(context.Background(), ChatRequest{Message: "x"}, nil)
	if err != nil || sum.Outcome != OutcomeCompleted {
		t.Errorf("trusting client: %v, %+v", err, sum)
	}
}

// stallingServer sends frames, then holds the response open until the
// client goes away; disconnected is closed when the server sees that.
func stallingServer(t *testing.T, frames ...string) (srv *httptest.Server, disconnected chan struct{}) {
	t.Helper()
	disconnected = make(chan struct{})
	var once sync.Once
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the whole body lets the server notice the client going
		// away (net/http watches the connection only after the body).
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range frames {
			io.WriteString(w, f)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		once.Do(func() { close(disconnected) })
	}))
	t.Cleanup(srv.Close)
	return srv, disconnected
}

func waitClosed(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testWait):
		t.Fatalf("%s did not happen", what)
	}
}

func TestChatCancelClosesRequest(t *testing.T) {
	srv, disconnected := stallingServer(t,
		"data: {\"dialog_id\": \"d\", \"type\": \"chat_start\"}\r\n\r\n",
		"data: {\"dialog_id\": \"d\", \"type\": \"chat\", \"content\": \"partial\"}\r\n\r\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var evs []Event
	emit := func(e Event) {
		evs = append(evs, e)
		if e.Type == KindText {
			cancel() // the user presses Stop mid-stream
		}
	}
	sum, err := NewClient(ClientConfig{BaseURL: srv.URL}).Chat(ctx, ChatRequest{Message: "hi"}, emit)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	waitClosed(t, disconnected, "the server seeing the disconnect")
	checkOneTurnEnd(t, evs, OutcomeCancelled)
	if sum.Text != "partial" {
		t.Errorf("partial text = %q", sum.Text)
	}
}

func TestChatCancelBeforeTheStream(t *testing.T) {
	stop := errors.New("user pressed stop")
	for _, cause := range []error{nil, stop} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		srv, _ := sseServer(t, nil, "data: {\"type\": \"done\", \"done\": true}\n\n")
		emit, evs := collect()
		sum, err := NewClient(ClientConfig{BaseURL: srv.URL}).Chat(ctx, ChatRequest{Message: "hi"}, emit)
		if err == nil || (cause == nil && !errors.Is(err, context.Canceled)) || (cause != nil && !errors.Is(err, stop)) {
			t.Fatalf("cause %v: err = %v", cause, err)
		}
		checkOneTurnEnd(t, *evs, OutcomeCancelled)
		if sum.Outcome != OutcomeCancelled || len(sum.Errors) != 0 {
			t.Errorf("cause %v: summary %+v", cause, sum)
		}
	}
}

func TestChatIdleTimeoutEndsInterrupted(t *testing.T) {
	srv, disconnected := stallingServer(t, "data: {\"dialog_id\": \"d\", \"type\": \"chat\", \"content\": \"so far\"}\r\n\r\n")
	emit, evs := collect()
	sum, err := NewClient(ClientConfig{BaseURL: srv.URL, IdleTimeout: 50 * time.Millisecond}).Chat(context.Background(), ChatRequest{Message: "hi"}, emit)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	checkOneTurnEnd(t, *evs, OutcomeInterrupted)
	waitClosed(t, disconnected, "the server seeing the stalled request closed")
	if sum.Text != "so far" {
		t.Errorf("text = %q", sum.Text)
	}
}

// lifecycleServer is a small lifecycle upstream: GET /api/chat/stream opens
// a session (session_start), POST /api/chat/message {sessionId, message}
// answers on that session's stream. With busy set, every POST gets 409.
type lifecycleServer struct {
	t      *testing.T
	busy   bool
	stall  bool // answer with message_start and text, never message_end
	silent bool // accept the message, send nothing at all
	hang   bool // never answer the message
	mu     sync.Mutex
	next   int
	outs   map[string]chan string // session id → frames to write
	posts  []map[string]any
	gone   chan string // session ids whose stream closed
}

func newLifecycleServer(t *testing.T, busy bool) (*lifecycleServer, *httptest.Server) {
	ls := &lifecycleServer{t: t, busy: busy, outs: map[string]chan string{}, gone: make(chan string, 8)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/chat/stream", ls.stream)
	mux.HandleFunc("POST /api/chat/message", ls.message)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return ls, srv
}

func (ls *lifecycleServer) stream(w http.ResponseWriter, r *http.Request) {
	ls.mu.Lock()
	ls.next++
	id := fmt.Sprintf("sess-%d", ls.next)
	out := make(chan string, 16)
	ls.outs[id] = out
	ls.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"type\": \"session_start\", \"sessionId\": %q}\n\n", id)
	w.(http.Flusher).Flush()
	for {
		select {
		case f := <-out:
			io.WriteString(w, f)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			ls.gone <- id
			return
		}
	}
}

func (ls *lifecycleServer) message(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	io.Copy(io.Discard, r.Body) // so that the server notices a client going away
	ls.mu.Lock()
	ls.posts = append(ls.posts, body)
	out := ls.outs[fmt.Sprint(body["sessionId"])]
	ls.mu.Unlock()
	if ls.busy {
		http.Error(w, `{"error": "Session is currently processing a message"}`, http.StatusConflict)
		return
	}
	if out == nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	if ls.hang {
		<-r.Context().Done()
		return
	}
	if ls.silent {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	mid := fmt.Sprintf("m%d", len(ls.posts))
	// The events go out before the POST is answered, as a server that
	// processes the message inside the request would do.
	out <- fmt.Sprintf("data: {\"type\": \"message_start\", \"message_id\": %q}\n\n", mid)
	out <- fmt.Sprintf("data: {\"type\": \"text\", \"message_id\": %q, \"content\": \"echo: %s\"}\n\n", mid, body["message"])
	if !ls.stall {
		out <- fmt.Sprintf("data: {\"type\": \"message_end\", \"message_id\": %q}\n\n", mid)
	}
	w.WriteHeader(http.StatusAccepted)
}

func TestChatLifecycleTwoTurnsOnOneSession(t *testing.T) {
	ls, srv := newLifecycleServer(t, false)
	c := NewClient(ClientConfig{BaseURL: srv.URL, Dialect: DialectLifecycle})
	defer c.Close()

	emit, evs := collect()
	sum, err := c.Chat(context.Background(), ChatRequest{Message: "one", TurnID: "t1"}, emit)
	if err != nil {
		t.Fatalf("first turn: %v", err)
	}
	checkOneTurnEnd(t, *evs, OutcomeCompleted)
	if sum.DialogID != "sess-1" || sum.Text != "echo: one" {
		t.Fatalf("first turn: dialog %q text %q", sum.DialogID, sum.Text)
	}

	emit, evs = collect()
	sum, err = c.Chat(context.Background(), ChatRequest{DialogID: "sess-1", Message: "two", TurnID: "t2"}, emit)
	if err != nil {
		t.Fatalf("second turn: %v", err)
	}
	checkOneTurnEnd(t, *evs, OutcomeCompleted)
	if sum.Text != "echo: two" {
		t.Fatalf("second turn text %q", sum.Text)
	}
	ls.mu.Lock()
	posts, opened := ls.posts, ls.next
	ls.mu.Unlock()
	want := []map[string]any{{"sessionId": "sess-1", "message": "one"}, {"sessionId": "sess-1", "message": "two"}}
	if diff := cmp.Diff(want, posts); diff != "" {
		t.Errorf("POST bodies (-want +got):\n%s", diff)
	}
	if opened != 1 {
		t.Errorf("%d session streams opened, want 1", opened)
	}
	c.Close()
	select {
	case id := <-ls.gone:
		if id != "sess-1" {
			t.Errorf("closed session %q", id)
		}
	case <-time.After(testWait):
		t.Fatal("Close did not close the session stream")
	}
}

func TestChatLifecycleBusy(t *testing.T) {
	_, srv := newLifecycleServer(t, true)
	c := NewClient(ClientConfig{BaseURL: srv.URL, Dialect: DialectLifecycle})
	defer c.Close()
	emit, evs := collect()
	_, err := c.Chat(context.Background(), ChatRequest{Message: "hi"}, emit)
	if !errors.Is(err, ErrDialogBusy) {
		t.Fatalf("err = %v, want ErrDialogBusy", err)
	}
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusConflict || !strings.Contains(err.Error(), "currently processing") {
		t.Errorf("err = %v, want the 409 and its body", err)
	}
	// What people read says what happened and what to do, once: not the
	// kind's name ("dialog busy: ...") nor the body's JSON quoted.
	want := "lifecycle dialog sess-1 is still answering an earlier message (POST " + srv.URL + "/api/chat/message: 409 Conflict: Session is currently processing a message): wait for that answer to end, or start a new dialog"
	if err.Error() != want {
		t.Errorf("err text:\n got %s\nwant %s", err, want)
	}
	checkOneTurnEnd(t, *evs, OutcomeError)
	if (*evs)[0].Type != KindError || (*evs)[0].Error.Code != "dialog_busy" {
		t.Errorf("events = %s, first %+v", kinds(*evs), (*evs)[0].Error)
	}
}

func TestChatLifecycleUnknownSession(t *testing.T) {
	_, srv := newLifecycleServer(t, false)
	c := NewClient(ClientConfig{BaseURL: srv.URL, Dialect: DialectLifecycle})
	defer c.Close()
	emit, evs := collect()
	_, err := c.Chat(context.Background(), ChatRequest{DialogID: "sess-404", Message: "hi"}, emit)
	if !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("err = %v, want ErrSessionClosed", err)
	}
	if want := "lifecycle dialog sess-404 has no open session stream (a lifecycle dialog ends with its stream): start a new dialog"; err.Error() != want {
		t.Errorf("err text %v, want %s", err, want)
	}
	checkOneTurnEnd(t, *evs, OutcomeError)
}

func TestChatLifecycleCancelClosesTheSession(t *testing.T) {
	ls, srv := newLifecycleServer(t, false)
	ls.stall = true
	c := NewClient(ClientConfig{BaseURL: srv.URL, Dialect: DialectLifecycle})
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var evs []Event
	emit := func(e Event) {
		evs = append(evs, e)
		if e.Type == KindText {
			cancel()
		}
	}
	sum, err := c.Chat(ctx, ChatRequest{Message: "hi"}, emit)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	checkOneTurnEnd(t, evs, OutcomeCancelled)
	select {
	case id := <-ls.gone:
		if id != sum.DialogID {
			t.Errorf("closed session %q, want %q", id, sum.DialogID)
		}
	case <-time.After(testWait):
		t.Fatal("the server did not see the session stream close")
	}
	// The dialog ended with its stream.
	_, err = c.Chat(context.Background(), ChatRequest{DialogID: sum.DialogID, Message: "again"}, nil)
	if !errors.Is(err, ErrSessionClosed) {
		t.Errorf("next turn: err = %v, want ErrSessionClosed", err)
	}
}

func TestChatLifecycleIdleTimeout(t *testing.T) {
	ls, srv := newLifecycleServer(t, false)
	ls.stall = true
	c := NewClient(ClientConfig{BaseURL: srv.URL, Dialect: DialectLifecycle, IdleTimeout: 50 * time.Millisecond})
	defer c.Close()
	emit, evs := collect()
	sum, err := c.Chat(context.Background(), ChatRequest{Message: "hi"}, emit)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	checkOneTurnEnd(t, *evs, OutcomeInterrupted)
	if sum.Text != "echo: hi" {
		t.Errorf("text = %q", sum.Text)
	}
	// The abandoned message is still running upstream: the dialog is busy
	// until its message_end, and nothing is posted meanwhile.
	_, err = c.Chat(context.Background(), ChatRequest{DialogID: sum.DialogID, Message: "again"}, nil)
	if !errors.Is(err, ErrDialogBusy) {
		t.Errorf("next turn: err = %v, want ErrDialogBusy", err)
	}
	if want := "lifecycle dialog " + sum.DialogID + " is still answering an earlier message: wait for that answer to end, or start a new dialog"; err == nil || err.Error() != want {
		t.Errorf("next turn: err text %v, want %s", err, want)
	}
	ls.mu.Lock()
	n := len(ls.posts)
	ls.mu.Unlock()
	if n != 1 {
		t.Errorf("%d messages posted, want 1", n)
	}
}

func TestChatIdleTimeoutBeforeTheAnswer(t *testing.T) {
	srv, disconnected := stallingServer(t) // never even sends the response head
	emit, evs := collect()
	sum, err := NewClient(ClientConfig{BaseURL: srv.URL, IdleTimeout: 50 * time.Millisecond}).Chat(context.Background(), ChatRequest{Message: "hi"}, emit)
	var ie *IdleTimeoutError
	if !errors.As(err, &ie) || !errors.Is(err, ErrIdleTimeout) || ie.URL != srv.URL+"/api/chat" {
		t.Fatalf("err = %v, want *IdleTimeoutError for the chat URL", err)
	}
	checkOneTurnEnd(t, *evs, OutcomeInterrupted)
	if sum.Outcome != OutcomeInterrupted {
		t.Errorf("summary outcome %s", sum.Outcome)
	}
	waitClosed(t, disconnected, "the server seeing the stalled request closed")
}

func TestChatLifecycleSilentServer(t *testing.T) {
	for _, hang := range []bool{false, true} {
		t.Run(fmt.Sprintf("message answered %v", !hang), func(t *testing.T) {
			ls, srv := newLifecycleServer(t, false)
			ls.silent, ls.hang = true, hang
			c := NewClient(ClientConfig{BaseURL: srv.URL, Dialect: DialectLifecycle, IdleTimeout: 50 * time.Millisecond})
			defer c.Close()
			emit, evs := collect()
			sum, err := c.Chat(context.Background(), ChatRequest{Message: "hi"}, emit)
			// An accepted message starts the turn (no error, the outcome
			// says it); an unanswered one is a failure before the turn.
			if hang != errors.Is(err, ErrIdleTimeout) || (!hang && err != nil) {
				t.Fatalf("err = %v", err)
			}
			checkOneTurnEnd(t, *evs, OutcomeInterrupted)
			if sum.DialogID != "sess-1" {
				t.Errorf("dialog = %q", sum.DialogID)
			}
			// The message may still be queued upstream: busy, nothing posted.
			if _, err := c.Chat(context.Background(), ChatRequest{DialogID: "sess-1", Message: "again"}, nil); !errors.Is(err, ErrDialogBusy) {
				t.Errorf("next turn: %v, want ErrDialogBusy", err)
			}
		})
	}
}

func TestChatBadBaseURL(t *testing.T) {
	for _, base := range []string{"localhost:8765", "", "/api", "ftp://host/"} {
		err := failingChat(t, ClientConfig{BaseURL: base}, "request")
		if !strings.Contains(err.Error(), "not an absolute http(s) URL") {
			t.Errorf("%q: %v", base, err)
		}
	}
}
