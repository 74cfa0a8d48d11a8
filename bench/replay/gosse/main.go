// Command gosse is the floor of bench/replay.sh: go-sse's bare Read loop over
// a recorded stream, printing nothing. No reader of that stream that uses
// go-sse for the framing, smith replay included, can do less work.
//
//	gosse FILE.sse
package main

import (
	"fmt"
	"os"

	sse "github.com/tmaxmax/go-sse"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosse:", err)
		os.Exit(2)
	}
	n := 0
	for _, err := range sse.Read(f, &sse.ReadConfig{MaxEventSize: 16 << 20}) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "gosse:", err)
			os.Exit(1)
		}
		n++
	}
	if n == 0 {
		os.Exit(1)
	}
}
