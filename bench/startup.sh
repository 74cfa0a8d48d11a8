#!/bin/sh
# startup.sh: whole-process cost of smith next to git apply and the Go floor
# (a hello world built by the same toolchain, and the same linked with every
# package smith links: bench/startup/hellodeps), with perf stat, then
# `smith version` against both alternating in the same rounds (bench/abproc)
# with the ratio. See docs/benchmarks.md, "Where smith's time goes".
#
#   bench/startup.sh [RUNS]      (default 300; needs perf and git)
#
# Every command runs in a scratch git repository of one 50-line file, with a
# one-hunk patch; --check leaves the file as it is, so every run is the same.
# Environment: BIN (binaries, default $TMPDIR/smith-bench).
set -eu
runs=${1:-300}
cd "$(dirname "$0")/.."
bin=${BIN:-${TMPDIR:-/tmp}/smith-bench}
mkdir -p "$bin"
CGO_ENABLED=0 go build -o "$bin/hello" ./bench/startup/hello
CGO_ENABLED=0 go build -o "$bin/hellodeps" ./bench/startup/hellodeps
go build -o "$bin/abproc" ./bench/abproc
CGO_ENABLED=0 go build -o "$bin/smith" ./cmd/smith
CGO_ENABLED=1 go build -o "$bin/smith-cgo" ./cmd/smith

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

echo "| command | elapsed ms | CPU ms | page faults |"
echo "|---|---|---|---|"
measure "$bin/hello"
measure "$bin/hellodeps"
measure git --version
measure git apply --check one.patch
measure "$bin/smith" version
measure "$bin/smith" apply --check one.patch
measure "$bin/smith-cgo" version
measure "$bin/smith-cgo" apply --check one.patch

echo
"$bin/abproc" -rounds "$runs" -- smith="$bin/smith" version -- hello="$bin/hello" -- hellodeps="$bin/hellodeps" | tee "$ws/table"
awk -F'|' '$2 ~ /^ (smith|hello|hellodeps) $/ { gsub(/ /, "", $2); cpu[$2] = $3 }
	END { printf "smith version / hello world: %.2fx by CPU (target <= 1.3x); hello linked with smith'"'"'s packages / hello world: %.2fx\n", cpu["smith"] / cpu["hello"], cpu["hellodeps"] / cpu["hello"] }' "$ws/table"
