#!/bin/sh
# replay.sh: `smith replay --json` as a whole process on a 100k-event
# AgentSmithy v2 stream, side by side with its anchor (the reader a
# JavaScript client would write: eventsource-parser behind a streaming
# TextDecoder, JSON.parse and a switch per event, in Node) and its floor (a
# bare go-sse Read loop that prints nothing). See docs/benchmarks.md.
#
#   bench/replay.sh [ROUNDS] [BASE-REV]     (default 15 rounds; needs node, npm)
#
# With BASE-REV, smith built at that commit runs in the same rounds, and its
# output must equal the working tree's byte for byte. Prints the load, a
# table of CPU (user + system) and wall medians, and the ratios.
# Environment: BIN (binaries, default $TMPDIR/smith-bench), EVENTS (100000).
set -eu
rounds=${1:-15}
base=${2:-}
cd "$(dirname "$0")/.."
bin=${BIN:-${TMPDIR:-/tmp}/smith-bench}
mkdir -p "$bin"
go build -o "$bin/smith" ./cmd/smith
go build -o "$bin/gosse" ./bench/replay/gosse
go build -o "$bin/abproc" ./bench/abproc
(cd bench/replay/node && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
stream=$bin/v2.sse
go run ./bench/replay/gen -n "${EVENTS:-100000}" >"$stream"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
set -- smith="$bin/smith" replay --json "$stream" -- node=node bench/replay/node/reader.mjs "$stream" -- gosse="$bin/gosse" "$stream"
if [ -n "$base" ]; then
	mkdir "$out/src"
	git archive "$base" | tar -x -C "$out/src"
	(cd "$out/src" && go build -o "$bin/smith-base" ./cmd/smith)
	set -- "$@" -- base="$bin/smith-base" replay --json "$stream"
fi
echo "stream: $(wc -c <"$stream") bytes, ${EVENTS:-100000} events; $(uptime)"
"$bin/abproc" -rounds "$rounds" -stdout-dir "$out" -- "$@" | tee "$out/table"
if [ -n "$base" ]; then
	cmp "$out/smith.out" "$out/base.out" && echo "output: byte-identical to $base"
fi
awk -F'|' '$2 ~ /^ (smith|node|gosse|base) $/ { gsub(/ /, "", $2); cpu[$2] = $3; wall[$2] = $5 }
	END {
		printf "throughput, smith / node (anchor): %.2fx by CPU, %.2fx by wall time (target >= 2.5x)\n", cpu["node"] / cpu["smith"], wall["node"] / wall["smith"]
		printf "cost, smith / bare go-sse (floor):  %.2fx by CPU, %.2fx by wall time (target <= 1.5x)\n", cpu["smith"] / cpu["gosse"], wall["smith"] / wall["gosse"]
		if ("base" in cpu) printf "smith / base: %.2fx by CPU, %.2fx by wall time\n", cpu["smith"] / cpu["base"], wall["smith"] / wall["base"]
	}' "$out/table"
