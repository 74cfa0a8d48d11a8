// Command hello is the floor of bench/startup.sh: the smallest Go program that
// writes to stdout. No Go binary, smith included, can start and exit faster
// on the same machine, so it says how much of smith's time is attainable.
package main

import "os"

func main() { os.Stdout.WriteString("hi\n") }
