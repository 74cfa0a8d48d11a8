// Command hellofloor is bench/startup.sh's third floor: the hello world of
// bench/startup/hello linked with real uses of the libraries smith is
// required to build on (cobra, go-sse over net/http with TLS, jsonrpc2,
// go-diff, fsnotify, a TOML decoder, log/slog), called only behind a
// condition that never holds. It pays their package initialization and the
// start-up of a binary that contains what they need, and runs none of it:
// no program that does smith's job with these libraries starts faster.
//
// Each library's use is in a file of its own, built unless the tag
// floor_only is given; with floor_only, only the files whose tag is also
// given (floor_cobra, floor_http, floor_jsonrpc2, floor_toml, floor_fsdiff,
// floor_slog), so that bench/startup.sh -parts can say what each one costs.
package main

import "os"

// uses are the libraries' uses linked into this build (each file adds its
// own).
var uses []func()

func main() {
	if len(os.Args) > 1<<20 {
		for _, use := range uses {
			use()
		}
	}
	os.Stdout.WriteString("hi\n")
}
