package upstream

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rawChunks sends a request over a bare TCP connection and returns the
// response head and the sizes of the HTTP/1.1 chunks of its body: each
// flush of the server is one chunk, so the sizes are the write sizes.
func rawChunks(t *testing.T, base, request string) (head string, sizes []int, body string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The server answers only to its own Host (localOnly).
	request = strings.Replace(request, "\r\nHost: x\r\n", "\r\nHost: "+u.Host+"\r\n", 1)
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	var h strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("head: %v", err)
		}
		if line == "\r\n" {
			break
		}
		h.WriteString(line)
	}
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("chunk size: %v", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		if err != nil {
			t.Fatalf("chunk size line %q", line)
		}
		if n == 0 {
			return h.String(), sizes, b.String()
		}
		chunk := make([]byte, n+2)
		if _, err := io.ReadFull(br, chunk); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, int(n))
		b.Write(chunk[:n])
	}
}

func TestReplayChunkSizes(t *testing.T) {
	recorded := "data: {\"dialog_id\": \"d\", \"type\": \"chat\", \"content\": \"héllo\"}\r\n\r\n: ping\r\n\r\ndata: {\"dialog_id\": \"d\", \"type\": \"done\", \"done\": true}\r\n\r\n"
	_, base := newTestServer(t, Options{
		Replay:       []byte(recorded),
		ChunkSizes:   []int{1, 7, 30},
		ReplayHeader: http.Header{"X-Test": {"yes"}, "Content-Type": {"text/event-stream"}},
	})
	req := "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
	for range 2 { // every chat request gets the same body
		head, sizes, body := rawChunks(t, base, req)
		if body != recorded {
			t.Fatalf("replayed body differs:\n got %q\nwant %q", body, recorded)
		}
		var want []int
		for n, i := len(recorded), 0; n > 0; i++ {
			w := min([]int{1, 7, 30}[i%3], n)
			want = append(want, w)
			n -= w
		}
		if diff := cmp.Diff(want, sizes); diff != "" {
			t.Errorf("write sizes (-want +got):\n%s", diff)
		}
		if !strings.Contains(head, "X-Test: yes") || !strings.Contains(head, "Content-Type: text/event-stream\r\n") {
			t.Errorf("head:\n%s", head)
		}
	}
}

// TestStreamFlushesEachEvent shows that the agent's events leave the
// server one by one (one chunk per event), not buffered.
func TestStreamFlushesEachEvent(t *testing.T) {
	_, base := newTestServer(t, Options{Protocol: ProtocolV0})
	body := `{"messages": [{"role": "user", "content": "delete README.md"}]}`
	req := fmt.Sprintf("POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	_, sizes, got := rawChunks(t, base, req)
	evs, _ := events([]byte(got))
	if len(sizes) != len(evs) {
		t.Errorf("%d chunks for %d events", len(sizes), len(evs))
	}
}
