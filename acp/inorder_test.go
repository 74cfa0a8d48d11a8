package acp

import (
	"slices"
	"testing"
)

// TestInOrder: every value put is handled, in the order put, before wait
// returns; put does not wait for fn (here fn is blocked until all are put).
func TestInOrder(t *testing.T) {
	release := make(chan struct{})
	var got []int
	put, wait := inOrder(func(v int) {
		<-release
		got = append(got, v)
	})
	var want []int
	for i := range 1000 {
		put(i) // would deadlock here if put waited for fn
		want = append(want, i)
	}
	close(release)
	wait()
	if !slices.Equal(got, want) {
		t.Fatalf("handled %d values, out of order or missing", len(got))
	}
}
