//go:build linux

package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestHugeHeapAdvisesTheHeap: for a mid-sized diff, the heap range
// hugeHeap reports is one the kernel marks for huge pages ("hg" in its
// VmFlags), at least a huge page long.
func TestHugeHeapAdvisesTheHeap(t *testing.T) {
	if !hugePagesOnRequest() {
		t.Skip("transparent huge pages are not given on request here (/sys/kernel/mm/transparent_hugepage/enabled)")
	}
	start, n := hugeHeap(1<<20, func(string) string { return "" })
	if n < hugePage || start%hugePage != 0 {
		t.Fatalf("hugeHeap(1 MiB) advised %d bytes at %#x, want at least one aligned huge page", n, start)
	}
	flags := vmFlagsAt(t, start, start+uintptr(n))
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the advised range %#x+%d has VmFlags %q, want hg (MADV_HUGEPAGE)", start, n, flags)
	}
}

// TestHugeHeapOnlyForMidSizedDiffs: a small or a large diff, and a user
// who turned huge pages off for Go, get no advice.
func TestHugeHeapOnlyForMidSizedDiffs(t *testing.T) {
	none := func(string) string { return "" }
	for _, c := range []struct {
		name   string
		size   int64
		getenv func(string) string
	}{
		{"small", lazyGCFrom - 1, none},
		{"large", lazyGCBelow, none},
		{"disablethp", 1 << 20, func(k string) string {
			if k == "GODEBUG" {
				return "madvdontneed=1,disablethp=1"
			}
			return ""
		}},
	} {
		if start, n := hugeHeap(c.size, c.getenv); n != 0 || start != 0 {
			t.Errorf("%s: hugeHeap advised %d bytes at %#x, want none", c.name, n, start)
		}
	}
}

// vmFlagsAt returns the VmFlags of the mapping of this process that holds
// [lo, hi), failing the test when no single mapping does.
func vmFlagsAt(t *testing.T, lo, hi uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if r, _, ok := strings.Cut(line, " "); ok && strings.Contains(r, "-") && !strings.HasSuffix(r, ":") {
			a, b, _ := strings.Cut(r, "-")
			from, err1 := strconv.ParseUint(a, 16, 64)
			to, err2 := strconv.ParseUint(b, 16, 64)
			in = err1 == nil && err2 == nil && uintptr(from) <= lo && hi <= uintptr(to)
			continue
		}
		if in {
			if v, ok := strings.CutPrefix(line, "VmFlags:"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no single mapping holds %#x-%#x", lo, hi)
	return ""
}
