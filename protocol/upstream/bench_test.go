package upstream

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkTurn measures whole chat turns over loopback HTTP: a help
// answer (no edit) and, for v2, a rename that writes the file and takes a
// checkpoint (renamed back and forth so the workspace stays small).
func BenchmarkTurn(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts Options
		msgs []string
	}{
		{"v2-help", Options{}, []string{"where is helper used?"}},
		{"v2-rename", Options{}, []string{"rename total to sum in main.go", "rename sum to total in main.go"}},
		{"oracle-rename", Options{Dialect: "oracle"}, []string{"rename total to sum in main.go"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_, base := newTestServer(b, tc.opts)
			var bytes int64
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				msg := tc.msgs[i%len(tc.msgs)]
				body := fmt.Sprintf(`{"messages": [{"role": "user", "content": %q}], "message": %q}`, msg, msg)
				res, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				bytes += n
			}
			b.SetBytes(bytes / int64(b.N))
		})
	}
}

// BenchmarkReplay measures replay throughput of an 8 MiB recording in
// 4 KiB flushed writes.
func BenchmarkReplay(b *testing.B) {
	ev := "data: {\"dialog_id\": \"d\", \"type\": \"chat\", \"content\": \"" + strings.Repeat("x", 60) + "\"}\r\n\r\n"
	body := strings.Repeat(ev, (8<<20)/len(ev))
	_, base := newTestServer(b, Options{Replay: []byte(body), ChunkSizes: []int{4096}})
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		res, err := http.Post(base+"/api/chat", "application/json", strings.NewReader("{}"))
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := io.Copy(io.Discard, res.Body); n != int64(len(body)) {
			b.Fatalf("replayed %d of %d bytes", n, len(body))
		}
		res.Body.Close()
	}
}
