//go:build !linux

package main

// hugeHeap does nothing here: transparent huge pages on request are
// Linux's (hugeheap_linux.go).
func hugeHeap(size int64, getenv func(string) string) (uintptr, int) { return 0, 0 }
