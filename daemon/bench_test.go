package daemon

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkTurnWithChange measures one whole v2 turn on loopback: dialog
// lock, request, SSE stream, a file_edit verified against disk and
// recorded in the journal.
func BenchmarkTurnWithChange(b *testing.B) {
	f := newFixture(b, fixtureOpts{protocol: "v2", files: map[string]string{"main.go": mainGo}})
	p := f.e.Attach(nil)
	b.ResetTimer()
	for i := range b.N {
		from, to := "Foo", "Bar"
		if i%2 == 1 {
			from, to = to, from
		}
		res, err := f.e.Chat(WithPeer(context.Background(), p), ChatRequest{Message: fmt.Sprintf("rename %s to %s in main.go", from, to)}, nil)
		if err != nil || len(res.Changes) != 1 {
			b.Fatalf("turn: %v %+v", err, res)
		}
	}
}

// BenchmarkApplyUndo measures apply (plan against disk, journal, atomic
// write) plus undo of a two-hunk change in a 2 000-line file.
func BenchmarkApplyUndo(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(mainGo)
	for i := range 2000 {
		fmt.Fprintf(&sb, "// filler line %d\n", i)
	}
	f := newFixture(b, fixtureOpts{protocol: "v0", files: map[string]string{"main.go": sb.String()},
		mutate: func(c *Config) { c.NoWatch = true }})
	p := f.e.Attach(nil)
	res, err := f.e.Chat(WithPeer(context.Background(), p), ChatRequest{Message: "rename Foo to Bar in main.go"}, nil)
	if err != nil || len(res.Changes) != 1 {
		b.Fatalf("turn: %v %+v", err, res)
	}
	id := res.Changes[0]
	b.ResetTimer()
	for range b.N {
		if _, err := f.e.Apply(WithPeer(context.Background(), p), id, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := f.e.Undo(WithPeer(context.Background(), p), id); err != nil {
			b.Fatal(err)
		}
	}
}
