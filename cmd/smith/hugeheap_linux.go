//go:build linux

package main

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeHeap lets the kernel back the heap a mid-sized smith apply is about
// to fill with transparent huge pages, where the system gives them on
// request only (the "madvise" setting, the default of many distributions).
//
// Why: such a run never collects (GOGC 800, runApply), so every byte it
// allocates is fresh memory, and the kernel faults it in a 4 KiB page at a
// time: on the 1 MB benchmark diff, 4 600 page faults for ~16 MB, a fifth
// of the process's CPU (docs/benchmarks.md, "smith apply (target 3)").
// What the run allocates is mostly what it must hold until the commit
// (every file before and after, the as-applied diffs, go-diff's hunks),
// so the number of pages cannot shrink much; with 2 MiB pages the same
// memory costs a few dozen faults. The Go runtime maps its heap a few MiB
// at a time as it grows and advises none of it, so an advice must cover
// heap already mapped: a block of 24 times the diff (what such a run
// allocates, with room to spare) is allocated, its 2 MiB-aligned interior
// advised, and collected at once, while the heap is still small; the
// allocations that follow reuse its pages. The runtime clears reused
// pages before handing them out, which costs part of what the faults
// saved, and the peak RSS grows by up to a huge page per region.
//
// It does nothing outside [lazyGCFrom, lazyGCBelow) (a small diff never
// fills a huge page; a large one is bound by memory, not faults), when
// huge pages are always or never used, or with GODEBUG=disablethp=1. It
// returns the start and length of the range advised (0, 0: none), for
// the tests.
func hugeHeap(size int64, getenv func(string) string) (uintptr, int) {
	if size < lazyGCFrom || size >= lazyGCBelow || strings.Contains(getenv("GODEBUG"), "disablethp=1") || !hugePagesOnRequest() {
		return 0, 0
	}
	b := make([]byte, hugeHeapPerByte*size)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := int((hugePage - p%hugePage) % hugePage)
	hi := len(b) - int((p+uintptr(len(b)))%hugePage)
	var start uintptr
	n := 0
	if hi-lo >= hugePage && unix.Madvise(b[lo:hi], unix.MADV_HUGEPAGE) == nil {
		start, n = p+uintptr(lo), hi-lo
	}
	b = nil
	runtime.GC() // the block is free before anything else is allocated
	return start, n
}

// hugeHeapPerByte is how many bytes hugeHeap advises per byte of diff:
// smith apply allocates ~16 per byte on the 1 MB benchmark, and a range
// advised but never used costs nothing (a huge page is faulted in only
// when touched).
const hugeHeapPerByte = 24

// hugePage is the size of a transparent huge page on amd64 and on arm64
// with 4 KiB pages; with other page sizes the advice covers less or
// nothing, which only forgoes the gain.
const hugePage = 2 << 20

// hugePagesOnRequest reports whether transparent huge pages back only
// the memory advised for them.
func hugePagesOnRequest() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && bytes.Contains(b, []byte("[madvise]"))
}
