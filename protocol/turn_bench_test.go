package protocol

import (
	"bytes"
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// cpuTime is the process's user + system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds the CPU time per op and the throughput per CPU second
// (both cores and the GC included): on a shared machine other load inflates
// them far less than wall time.
func reportCPU(b *testing.B, start time.Duration, n int, size int) {
	cpu := cpuTime(b) - start
	b.ReportMetric(float64(cpu.Milliseconds())/float64(n), "cpu-ms/op")
	b.ReportMetric(float64(size)*float64(n)/cpu.Seconds()/1e6, "MB/cpu-s")
}

// v2Stream builds an AgentSmithy v2 stream of n events with the server's
// real framing: chat deltas for the most part, reasoning, tool calls and
// file edits among them, a ping comment every 500 events, done at the end.
func v2Stream(n int) []byte {
	const d = `{"dialog_id": "050d5ee3ea774a418b52299e054ba351", `
	var b bytes.Buffer
	b.WriteString("data: " + d + `"type": "user", "content": "Refactor the store", "checkpoint": "9692df864aa109f4fbac5354619c13dd612b84ae", "session": "session_1"}` + "\r\n\r\n")
	for i := 1; i < n-1; i++ {
		switch {
		case i%500 == 0:
			fmt.Fprintf(&b, ": ping - 2025-12-29 11:20:%02d.482913+00:00\r\n\r\n", i%60)
			fallthrough
		case i%97 == 0:
			b.WriteString("data: " + d + `"type": "reasoning", "content": "Check the callers first."}` + "\r\n\r\n")
		case i%1000 == 1:
			b.WriteString("data: " + d + `"type": "tool_call", "name": "replace_in_file", "args": {"path": "internal/store/users.go", "diff": "------- SEARCH\n\treturn 1\n=======\n\treturn 2\n+++++++ REPLACE"}}` + "\r\n\r\n")
		case i%1000 == 2:
			b.WriteString("data: " + d + `"type": "file_edit", "file": "/home/dev/acme-api/internal/store/users.go", "diff": "--- a//home/dev/acme-api/internal/store/users.go\n+++ b//home/dev/acme-api/internal/store/users.go\n@@ -1,3 +1,3 @@\n package store\n\n-\treturn 1\n\n+\treturn 2\n"}` + "\r\n\r\n")
		case i%7 == 0:
			b.WriteString("data: " + d + `"type": "chat", "content": "line with \"quotes\"\n"}` + "\r\n\r\n")
		default:
			b.WriteString("data: " + d + `"type": "chat", "content": "The loop "}` + "\r\n\r\n")
		}
	}
	b.WriteString("data: " + d + `"type": "done", "done": true}` + "\r\n\r\n")
	return b.Bytes()
}

// BenchmarkUpstreamPath measures bytes in → normalized events out: SSE
// framing (go-sse plus the spec compensations), UTF-8 decoding, JSON,
// the AgentSmithy adapter and the turn state machine, through ReadTurn
// with its watchdog goroutine.
func BenchmarkUpstreamPath(b *testing.B) {
	in := v2Stream(100_000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	start, ops := cpuTime(b), 0
	for b.Loop() {
		ops++
		n := 0
		sum := ReadTurn(context.Background(), bytes.NewReader(in), StreamOptions{TurnID: "t"}, func(Event) { n++ })
		if sum.Outcome != OutcomeCompleted || n < 100_000 {
			b.Fatalf("outcome %s after %d events, violations %v", sum.Outcome, n, sum.Violations)
		}
	}
	reportCPU(b, start, ops, len(in))
}

// BenchmarkUpstreamPathSequential is the same path read with
// StreamOptions.Sequential (smith replay's way): everything on one
// goroutine, so that its CPU per byte is the path's own, with no
// hand-overs between cores in it.
func BenchmarkUpstreamPathSequential(b *testing.B) {
	in := v2Stream(100_000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	start, ops := cpuTime(b), 0
	for b.Loop() {
		ops++
		n := 0
		sum := ReadTurn(context.Background(), bytes.NewReader(in), StreamOptions{TurnID: "t", Sequential: true}, func(Event) { n++ })
		if sum.Outcome != OutcomeCompleted || n < 100_000 {
			b.Fatalf("outcome %s after %d events, violations %v", sum.Outcome, n, sum.Violations)
		}
	}
	reportCPU(b, start, ops, len(in))
}

// BenchmarkSSEReader is the framing layer alone, for comparison.
func BenchmarkSSEReader(b *testing.B) {
	in := v2Stream(100_000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	start, ops := cpuTime(b), 0
	for b.Loop() {
		ops++
		r := NewSSEReader(bytes.NewReader(in), 0)
		for _, err := range r.All() {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	reportCPU(b, start, ops, len(in))
}

// BenchmarkGoSSE is go-sse's bare sse.Read on the same stream: the floor
// the framing goroutine of ReadTurn cannot go below.
func BenchmarkGoSSE(b *testing.B) {
	in := v2Stream(100_000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	start, ops := cpuTime(b), 0
	for b.Loop() {
		ops++
		for _, err := range sse.Read(bytes.NewReader(in), &sse.ReadConfig{MaxEventSize: DefaultMaxEventSize}) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	reportCPU(b, start, ops, len(in))
}
