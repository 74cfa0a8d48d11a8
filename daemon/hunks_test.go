package daemon

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/smith-dev/smith/protocol"
)

// twentyLines is "l1\n" … "l20\n".
func twentyLines() string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}

// twoHunks replaces l3 by two lines and deletes l15; the second header
// states line 17, two lines below where l15 is.
const twoHunks = "--- a/f.txt\n+++ b/f.txt\n" +
	"@@ -2,3 +2,4 @@ first\n l2\n-l3\n+L3a\n+L3b\n l4\n" +
	"@@ -16,3 +17,2 @@\n l14\n-l15\n l16\n"

// placed is what a front reads of a hunk: where it is and what it says.
type placed struct {
	ID, Status                             string
	OldStart, OldLines, NewStart, NewLines int
	Text                                   string
}

func placedOf(hs []Hunk) []placed {
	var out []placed
	for _, h := range hs {
		out = append(out, placed{h.ID, h.Status, h.OldStart, h.OldLines, h.NewStart, h.NewLines, h.Text})
	}
	return out
}

// TestHunksCarryTheirPlaceInTheTextNow: the engine tells the fronts where
// each hunk is, before and after it is written, and the diff of a change
// and of its preview always goes forward.
func TestHunksCarryTheirPlaceInTheTextNow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{protocol: "v0", files: map[string]string{"f.txt": twentyLines()}, mutate: func(c *Config) { c.NoWatch = true }})
	p := f.e.Attach(nil)
	ctx := context.Background()
	c, err := f.e.Propose(WithPeer(context.Background(), p), "", protocol.Change{Path: "f.txt", Diff: twoHunks})
	if err != nil {
		t.Fatal(err)
	}
	h1 := "@@ -2,3 +2,4 @@ first\n l2\n-l3\n+L3a\n+L3b\n l4\n"
	pending := []placed{
		{"h1", StatusPending, 2, 3, 2, 4, h1},
		// l14..l16 are lines 14-16 now and 15-17 after h1 adds a line.
		{"h2", StatusPending, 14, 3, 15, 2, "@@ -14,3 +15,2 @@\n l14\n-l15\n l16\n"},
	}
	if diff := cmp.Diff(pending, placedOf(c.Hunks)); diff != "" {
		t.Fatalf("pending hunks (-want +got):\n%s", diff)
	}
	result := strings.Replace(strings.Replace(twentyLines(), "l3\n", "L3a\nL3b\n", 1), "l15\n", "", 1)
	if want := unifiedDiff("f.txt", []byte(twentyLines()), []byte(result)); c.Diff != want {
		t.Fatalf("change diff:\n%s\nwant:\n%s", c.Diff, want)
	}

	if _, err := f.e.Apply(WithPeer(ctx, p), c.ID, []string{"h1"}); err != nil {
		t.Fatal(err)
	}
	got, err := f.e.Change(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	mixed := []placed{
		{"h1", StatusApplied, 2, 3, 2, 4, h1},
		// l14..l16 are lines 15-17 now, and stay there after h2.
		{"h2", StatusPending, 15, 3, 15, 2, "@@ -15,3 +15,2 @@\n l14\n-l15\n l16\n"},
	}
	if diff := cmp.Diff(mixed, placedOf(got.Hunks)); diff != "" {
		t.Fatalf("hunks after applying h1 (-want +got):\n%s", diff)
	}

	if _, err := f.e.Apply(WithPeer(ctx, p), c.ID, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = f.e.Change(c.ID)
	applied := []placed{
		{"h1", StatusApplied, 2, 3, 2, 4, h1},
		{"h2", StatusApplied, 14, 3, 15, 2, "@@ -14,3 +15,2 @@\n l14\n-l15\n l16\n"},
	}
	if diff := cmp.Diff(applied, placedOf(got.Hunks)); diff != "" {
		t.Fatalf("applied hunks (-want +got):\n%s", diff)
	}
	if want := unifiedDiff("f.txt", []byte(twentyLines()), []byte(result)); got.Diff != want {
		t.Fatalf("diff of the applied change is not the forward one:\n%s\nwant:\n%s", got.Diff, want)
	}
	pv, err := f.e.Preview(ctx, c.ID, []string{"h2"})
	if err != nil {
		t.Fatal(err)
	}
	withoutH2 := strings.Replace(twentyLines(), "l3\n", "L3a\nL3b\n", 1)
	wantPv := &Preview{
		Path: "f.txt", Original: withoutH2, Result: result,
		Diff:   unifiedDiff("f.txt", []byte(withoutH2), []byte(result)),
		Hunks:  []Hunk{got.Hunks[1]},
		Status: StatusApplied,
	}
	if diff := cmp.Diff(wantPv, pv, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("preview of an applied hunk (-want +got):\n%s", diff)
	}
}

// TestMergeStatusesWithoutAMap: merging the recorded statuses into a
// fresh plan's hunks gives what a merge by id through a map gives,
// whether the two lists hold the same ids in the same order (merged index
// by index, into the old list's own array when asked) or not; and the
// pending ids of the merge, taken without the merged copy
// (pendingAfterMerge), are selectHunks' of it.
func TestMergeStatusesWithoutAMap(t *testing.T) {
	t.Parallel()
	statuses := []string{StatusPending, StatusApplied, StatusRejected, StatusConflict, StatusUndone, StatusAppliedUpstream}
	byMap := func(old, fresh []Hunk) []Hunk {
		prev := map[string]string{}
		for _, h := range old {
			prev[h.ID] = h.Status
		}
		out := slices.Clone(fresh)
		for i := range out {
			if s, ok := prev[out[i].ID]; ok && s != StatusPending && s != StatusUndone {
				out[i].Status = s
			}
		}
		return out
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	hunks := func(n int, ids func(int) string) []Hunk {
		hs := make([]Hunk, n)
		for i := range hs {
			hs[i] = Hunk{ID: ids(i), Status: statuses[rnd.IntN(len(statuses))], Match: "exact", Offset: rnd.IntN(9)}
		}
		return hs
	}
	for round := range 500 {
		n := rnd.IntN(12)
		fresh := hunks(n, hunkID)
		var old []Hunk
		switch round % 4 {
		case 0, 1: // the same hunks
			old = hunks(n, hunkID)
		case 2: // fewer or more
			old = hunks(rnd.IntN(12), hunkID)
		case 3: // the same number, other ids
			old = hunks(n, func(i int) string { return hunkID(n - i) })
		}
		want := byMap(old, fresh)
		if got := mergeStatuses(old, fresh); !slices.Equal(got, want) {
			t.Fatalf("mergeStatuses(%v, %v) = %v, want %v", old, fresh, got, want)
		}
		inPlace := slices.Clone(old)
		if got := mergeStatusesInto(inPlace, inPlace, fresh); !slices.Equal(got, want) {
			t.Fatalf("mergeStatusesInto(old, old, %v) from %v = %v, want %v", fresh, old, got, want)
		}
		probe := changeRecord{Change: Change{Hunks: want}}
		ids, _ := selectHunks(&probe, nil, StatusPending)
		if got := pendingAfterMerge(old, fresh); !slices.Equal(got, ids) {
			t.Fatalf("pendingAfterMerge(%v, %v) = %v, want %v", old, fresh, got, ids)
		}
	}
}
