package protocol

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkChatLoopback measures one whole turn through the client: the
// POST, the status and content-type checks, and 1000 AgentSmithy chat
// events read and normalized, from an httptest server on loopback.
//
//	go test ./protocol -run '^$' -bench ChatLoopback -benchtime 200x
func BenchmarkChatLoopback(b *testing.B) {
	const n = 1000
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, "data: {\"dialog_id\": \"d\", \"type\": \"chat\", \"content\": \"token %d \"}\r\n\r\n", i)
	}
	body.WriteString("data: {\"dialog_id\": \"d\", \"type\": \"done\", \"done\": true}\r\n\r\n")
	stream := body.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		io.WriteString(w, stream)
	}))
	defer srv.Close()
	c := NewClient(ClientConfig{BaseURL: srv.URL})
	b.SetBytes(int64(len(stream)))
	b.ResetTimer()
	for b.Loop() {
		events := 0
		sum, err := c.Chat(context.Background(), ChatRequest{Message: "hi"}, func(Event) { events++ })
		if err != nil || sum.Outcome != OutcomeCompleted || events != n+1 {
			b.Fatalf("turn: %v, %v, %d events", err, sum.Outcome, events)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "events/s")
}
