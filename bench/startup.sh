#!/bin/sh
# startup.sh: whole-process cost of smith next to git apply and the Go floors,
# with perf stat, then smith against the floors alternating in the same rounds
# (bench/abproc), with the ratios. See docs/benchmarks.md, "Start-up (target 4)".
#
#   bench/startup.sh [RUNS]          (default 300; needs perf and git)
#   bench/startup.sh -parts [RUNS]   what each required library costs alone
#
# The floors, all built like smith (go build, no cgo):
#   hello       bench/startup/hello: a Go hello world
#   hellodeps   bench/startup/hellodeps: hello with blank imports of every
#               package smith links (their package inits, little of their code)
#   hellofloor  bench/startup/hellofloor: hello linking real uses of the
#               libraries smith must build on (cobra, go-sse over net/http and
#               TLS, jsonrpc2, go-diff, fsnotify, TOML, slog), never run
#   linked      cmd/smith itself with main replaced (go build -overlay) by a
#               hello world that calls smith's run only behind a condition that
#               never holds: all of smith's code and package inits, none of
#               its work
# so that smith version - linked is what smith does at start, linked -
# hellofloor what smith's own code and its other libraries add, and
# hellofloor - hello what the required libraries cost.
#
# Every command runs in a scratch git repository of one 50-line file, with a
# one-hunk patch; --check leaves the file as it is, so every run is the same.
# All binaries are written by go build: a copy made with cp starts up to 30 %
# faster until its pages leave the page cache, so never compare a copied
# binary with a built one. Environment: BIN (binaries, default
# $TMPDIR/smith-bench).
set -eu
parts=
if [ "${1:-}" = -parts ]; then
	parts=1
	shift
fi
runs=${1:-300}
cd "$(dirname "$0")/.."
bin=${BIN:-${TMPDIR:-/tmp}/smith-bench}
mkdir -p "$bin"

if [ -n "$parts" ]; then
	# hellofloor with one library's use at a time (its floor_only tags).
	go build -o "$bin/abproc" ./bench/abproc
	CGO_ENABLED=0 go build -o "$bin/hello" ./bench/startup/hello
	CGO_ENABLED=0 go build -o "$bin/hellofloor" ./bench/startup/hellofloor
	set -- -- hello="$bin/hello"
	for lib in cobra http jsonrpc2 toml fsdiff slog; do
		CGO_ENABLED=0 go build -tags "floor_only,floor_$lib" -o "$bin/floor-$lib" ./bench/startup/hellofloor
		set -- "$@" -- "$lib=$bin/floor-$lib"
	done
	uptime
	"$bin/abproc" -rounds "$runs" "$@" -- hellofloor="$bin/hellofloor"
	uptime
	exit
fi
CGO_ENABLED=0 go build -o "$bin/hello" ./bench/startup/hello
CGO_ENABLED=0 go build -o "$bin/hellodeps" ./bench/startup/hellodeps
CGO_ENABLED=0 go build -o "$bin/hellofloor" ./bench/startup/hellofloor
go build -o "$bin/abproc" ./bench/abproc
CGO_ENABLED=0 go build -o "$bin/smith" ./cmd/smith
CGO_ENABLED=1 go build -o "$bin/smith-cgo" ./cmd/smith

# linked: main.go with main's body made unreachable at run time.
main_go=$(pwd)/cmd/smith/main.go
sed 's|^\tos.Exit(run(os.Args\[1:\], stdStreams()))$|\tif len(os.Args) > 1<<20 {\n\t\tos.Exit(run(os.Args[1:], stdStreams()))\n\t}\n\tos.Stdout.WriteString("hi\\n")|' \
	"$main_go" >"$bin/linked_main.go"
grep -q '1<<20' "$bin/linked_main.go" || { echo "startup.sh: cmd/smith/main.go's main changed; update the sed above" >&2; exit 1; }
printf '{"Replace":{"%s":"%s"}}\n' "$main_go" "$bin/linked_main.go" >"$bin/linked_overlay.json"
CGO_ENABLED=0 go build -overlay "$bin/linked_overlay.json" -o "$bin/linked" ./cmd/smith

ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cd "$ws"
seq 1 50 >a.txt
git init -q && git add a.txt
git -c user.name=bench -c user.email=bench@example.invalid commit -q -m base
sed 's/^25$/twenty-five/' a.txt >b.txt
git diff --no-index a.txt b.txt | sed 's|b/b.txt|b/a.txt|' >one.patch || true
rm b.txt

measure() {
	perf stat -r "$runs" -e task-clock,page-faults "$@" 2>&1 >/dev/null |
		awk -v cmd="$(echo "$*" | sed "s|$bin/||")" '
			/task-clock/ { cpu = $1 }
			/page-faults/ { pf = $1 }
			/seconds time elapsed/ { el = $1 * 1000 }
			END { printf "| `%s` | %.2f | %.2f | %s |\n", cmd, el, cpu, pf }'
}

uptime
echo "| command | elapsed ms | CPU ms | page faults |"
echo "|---|---|---|---|"
measure "$bin/hello"
measure "$bin/hellodeps"
measure "$bin/hellofloor"
measure "$bin/linked"
measure git --version
measure git apply --check one.patch
measure "$bin/smith" version
measure "$bin/smith" apply --check one.patch
measure "$bin/smith-cgo" version
measure "$bin/smith-cgo" apply --check one.patch

echo
"$bin/abproc" -rounds "$runs" -- smith="$bin/smith" version -- apply-check="$bin/smith" apply --check one.patch \
	-- hello="$bin/hello" -- hellodeps="$bin/hellodeps" -- hellofloor="$bin/hellofloor" -- linked="$bin/linked" | tee "$ws/table"
uptime
awk -F'|' '$2 ~ /^ (smith|apply-check|hello|hellodeps|hellofloor|linked) $/ { gsub(/ /, "", $2); cpu[$2] = $3 }
	END {
		h = cpu["hello"]
		printf "by CPU, against the hello world (target for smith version: <= 1.3x):\n"
		printf "  smith version %.2fx, smith apply --check %.2fx\n", cpu["smith"] / h, cpu["apply-check"] / h
		printf "  linked (smith'"'"'s code and inits, no work) %.2fx, hellofloor (required libraries) %.2fx, hellodeps (package inits) %.2fx\n", cpu["linked"] / h, cpu["hellofloor"] / h, cpu["hellodeps"] / h
		printf "  smith version / linked %.2fx (smith'"'"'s work at start), linked / hellofloor %.2fx (smith'"'"'s code and other libraries)\n", cpu["smith"] / cpu["linked"], cpu["linked"] / cpu["hellofloor"]
	}' "$ws/table"
