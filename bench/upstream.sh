#!/bin/sh
# upstream.sh: BenchmarkUpstreamPath (bytes in -> normalized events out,
# in-process) against BenchmarkGoSSE (go-sse's bare Read loop on the same
# 100k-event stream), alternating in the same minutes, with the ratio of
# their medians by wall-clock throughput and by CPU time; and the same path
# read on one goroutine (BenchmarkUpstreamPathSequential), whose CPU is the
# path's own. See docs/benchmarks.md, "Upstream path".
#
#   bench/upstream.sh [ROUNDS]      (default 8; each round runs each benchmark 20x)
set -eu
rounds=${1:-8}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/protocol.test" ./protocol
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
while [ "$i" -lt "$rounds" ]; do
	i=$((i + 1))
	for b in UpstreamPath GoSSE UpstreamPathSequential; do
		(cd protocol && "$tmp/protocol.test" -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime 20x) | grep "^Benchmark$b" >>"$tmp/out"
	done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
	function median(a, n,   i, j, t) {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{ name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	  for (f = 1; f <= NF; f++) { if ($f == "MB/s") mbs[name, ++n1[name]] = $(f - 1); if ($f == "cpu-ms/op") cpu[name, ++n2[name]] = $(f - 1) } }
	END {
		for (k in n1) { for (i = 1; i <= n1[k]; i++) { t1[i] = mbs[k, i]; t2[i] = cpu[k, i] }; m[k] = median(t1, n1[k]); c[k] = median(t2, n2[k])
			printf "%-13s median %.1f MB/s (wall), %.1f cpu-ms/op, %d runs\n", k, m[k], c[k], n1[k] }
		printf "UpstreamPath / bare go-sse: %.2fx by wall-clock throughput, %.2fx by CPU (target >= 0.9x)\n", m["UpstreamPath"] / m["GoSSE"], c["GoSSE"] / c["UpstreamPath"]
		printf "UpstreamPathSequential / bare go-sse (one goroutine, the path'"'"'s own CPU per byte): %.2fx by wall-clock throughput, %.2fx by CPU\n", m["UpstreamPathSequential"] / m["GoSSE"], c["GoSSE"] / c["UpstreamPathSequential"]
	}' "$tmp/out"
