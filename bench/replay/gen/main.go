// Command gen writes the AgentSmithy v2 stream of bench/replay.sh: N events
// (default 100 000) with the server's real framing (CRLF, a ping comment
// every 500 events), chat deltas for the most part, reasoning, tool calls
// and file edits among them, done at the end. It is the same stream as
// protocol's BenchmarkUpstreamPath, so the whole-process and in-process
// numbers describe the same input.
//
//	go run ./bench/replay/gen -n 100000 >v2.sse
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
)

func main() {
	n := flag.Int("n", 100_000, "events in the stream")
	flag.Parse()
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	const d = `{"dialog_id": "050d5ee3ea774a418b52299e054ba351", `
	w.WriteString("data: " + d + `"type": "user", "content": "Refactor the store", "checkpoint": "9692df864aa109f4fbac5354619c13dd612b84ae", "session": "session_1"}` + "\r\n\r\n")
	for i := 1; i < *n-1; i++ {
		switch {
		case i%500 == 0:
			fmt.Fprintf(w, ": ping - 2025-12-29 11:20:%02d.482913+00:00\r\n\r\n", i%60)
			fallthrough
		case i%97 == 0:
			w.WriteString("data: " + d + `"type": "reasoning", "content": "Check the callers first."}` + "\r\n\r\n")
		case i%1000 == 1:
			w.WriteString("data: " + d + `"type": "tool_call", "name": "replace_in_file", "args": {"path": "internal/store/users.go", "diff": "------- SEARCH\n\treturn 1\n=======\n\treturn 2\n+++++++ REPLACE"}}` + "\r\n\r\n")
		case i%1000 == 2:
			w.WriteString("data: " + d + `"type": "file_edit", "file": "/home/dev/acme-api/internal/store/users.go", "diff": "--- a//home/dev/acme-api/internal/store/users.go\n+++ b//home/dev/acme-api/internal/store/users.go\n@@ -1,3 +1,3 @@\n package store\n\n-\treturn 1\n\n+\treturn 2\n"}` + "\r\n\r\n")
		case i%7 == 0:
			w.WriteString("data: " + d + `"type": "chat", "content": "line with \"quotes\"\n"}` + "\r\n\r\n")
		default:
			w.WriteString("data: " + d + `"type": "chat", "content": "The loop "}` + "\r\n\r\n")
		}
	}
	w.WriteString("data: " + d + `"type": "done", "done": true}` + "\r\n\r\n")
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
