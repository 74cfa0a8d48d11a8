package upstream

import (
	"net/http"
)

// serveReplay answers a chat request with the recorded body, byte for
// byte, in the configured write sizes (cycled), flushing after each write
// so a client sees exactly those chunk boundaries.
func (s *Server) serveReplay(w http.ResponseWriter, r *http.Request) {
	if !s.beginStream(w) {
		return
	}
	defer s.streams.Done()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	for k, v := range s.opts.ReplayHeader {
		h[http.CanonicalHeaderKey(k)] = v
	}
	w.WriteHeader(http.StatusOK)
	sk := newSink(w)
	body := s.opts.Replay
	sizes := s.opts.ChunkSizes
	if len(sizes) == 0 {
		sizes = []int{len(body)}
	}
	for i := 0; len(body) > 0; i++ {
		if r.Context().Err() != nil || s.shutdown.Err() != nil {
			return
		}
		n := min(max(sizes[i%len(sizes)], 1), len(body))
		if sk.write(body[:n]) != nil {
			return
		}
		body = body[n:]
	}
}
