#!/bin/sh
# serve.sh: smith serve relaying a stream to an editor over stdio (issue 17,
# target 2), before and after, in one command. See docs/benchmarks.md,
# "smith serve".
#
#   bench/serve.sh REV [ROUNDS]
#
#   bench/serve.sh 87e3fda 3
#
# Builds the editor benchmarks of REV (a clean export; this tree's
# editor/bench_test.go is copied in, so both run the same harness) and of
# the working tree, then runs, ROUNDS times, alternating REV and the tree:
#   ServePaced     3 000 deltas at 1 000 events/s: latency, cpu-% of a core, peak RSS
#   DirectPaced    the same stream read by a bare go-sse reader (the anchor)
#   ServeRate100k  300 000 deltas at 100 000 events/s (100 per ms): rate, lag growth
#   DirectRate100k its anchor
# and prints the medians, smith's added latency (serve minus direct of the
# same round) and the ratios tree/REV. Then a CPU profile of each version
# (BenchmarkServeInProcess, the server's own path: its top 5 functions).
set -eu
if [ $# -lt 1 ]; then
	sed -n '2,20p' "$0" >&2
	exit 2
fi
rev=$1 rounds=${2:-3}
cd "$(dirname "$0")/.."
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || { echo "serve.sh: $rev is not a commit" >&2; exit 2; }
mkdir "$tmp/base"
git archive "$rev" | tar -x -C "$tmp/base"
cp editor/bench_test.go "$tmp/base/editor/bench_test.go"
(cd "$tmp/base/editor" && go test -c -o "$tmp/base.test" .)
(cd editor && go test -c -o "$tmp/work.test" .)
short=$(git rev-parse --short "$rev")
echo "# smith serve, $short vs working tree, $rounds rounds; $(nproc) cores; uptime: $(uptime)"
i=0
while [ "$i" -lt "$rounds" ]; do
	i=$((i + 1))
	for v in base work; do
		dir=$root/editor
		[ "$v" = base ] && dir=$tmp/base/editor
		echo "# round $i $v load $(cut -d' ' -f1-3 /proc/loadavg)"
		# The benchmarks build smith from the source around the folder they
		# run in (editortest.Build("..")), so each version relays with its
		# own smith.
		(cd "$dir" && "$tmp/$v.test" -test.run '^$' -test.bench 'ServePaced$|DirectPaced$|ServeRate100k$|DirectRate100k$' -test.benchtime 1x) |
			grep '^Benchmark' | sed "s/^/$v $i /"
	done
done >"$tmp/runs.txt"
cat "$tmp/runs.txt"
python3 - "$tmp/runs.txt" "$short" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    v, rnd, name = f[0], f[1], re.sub(r"-\d+$", "", f[2])
    metrics = {f[k + 1]: float(f[k]) for k in range(6, len(f) - 1, 2)}
    rows.setdefault((v, name), []).append((rnd, metrics))
def med(v, name, m):
    xs = [r[1][m] for r in rows.get((v, name), []) if m in r[1]]
    return statistics.median(xs) if xs else float("nan")
def added(v, q, serve="BenchmarkServePaced", direct="BenchmarkDirectPaced"):
    d = dict(rows.get((v, direct), []))
    xs = [m[q] - d[r][q] for r, m in rows.get((v, serve), []) if r in d]
    return statistics.median(xs) if xs else float("nan")
print(f"\n| metric (median of rounds) | {sys.argv[2]} | working tree | tree/{sys.argv[2]} |")
print("|---|---|---|---|")
def line(label, a, b):
    ratio = b / a if a else float("nan")
    print(f"| {label} | {a:.1f} | {b:.1f} | {ratio:.2f} |")
for label, name, m in [
    ("1k/s: p50 latency, µs", "BenchmarkServePaced", "p50-µs"),
    ("1k/s: p99 latency, µs", "BenchmarkServePaced", "p99-µs"),
    ("1k/s: CPU, % of a core", "BenchmarkServePaced", "cpu-%"),
    ("1k/s: peak RSS, MB", "BenchmarkServePaced", "VmHWM-MB"),
    ("100k/s: events/s", "BenchmarkServeRate100k", "events/s"),
    ("100k/s: lag growth, µs", "BenchmarkServeRate100k", "lag-growth-µs"),
    ("100k/s: p50 latency, µs", "BenchmarkServeRate100k", "p50-µs"),
    ("100k/s: CPU, % of a core", "BenchmarkServeRate100k", "cpu-%"),
    ("100k/s: peak RSS, MB", "BenchmarkServeRate100k", "VmHWM-MB"),
    ("direct reader 1k/s: p50, µs", "BenchmarkDirectPaced", "p50-µs"),
    ("direct reader 1k/s: p99, µs", "BenchmarkDirectPaced", "p99-µs"),
]:
    line(label, med("base", name, m), med("work", name, m))
line("1k/s: added p50 (serve - direct, same round), µs", added("base", "p50-µs"), added("work", "p50-µs"))
line("1k/s: added p99 (serve - direct, same round), µs", added("base", "p99-µs"), added("work", "p99-µs"))
PY
echo
for v in base work; do
	dir=$root/editor
	[ "$v" = base ] && dir=$tmp/base/editor
	(cd "$dir" && "$tmp/$v.test" -test.run '^$' -test.bench 'ServeInProcess$' -test.benchtime 1x -test.cpuprofile "$tmp/$v.cpu") | grep '^Benchmark' | sed "s/^/$v /"
	echo "# $v: CPU profile of the server's path (focus client.chat), top 5 by own time"
	go tool pprof -top -focus 'client\)\.chat' "$tmp/$v.test" "$tmp/$v.cpu" 2>/dev/null | sed -n '/^Showing nodes/p;/flat  flat%/,+5p'
done
