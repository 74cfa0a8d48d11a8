#!/bin/sh
# ab.sh: one Go benchmark of two versions, run alternately so that both see
# the same machine (this VM's speed changes from minute to minute, so only
# numbers measured side by side compare). See docs/benchmarks.md.
#
#   bench/ab.sh REV PKG BENCH [ROUNDS]
#
#   bench/ab.sh 577e7b3 ./protocol 'UpstreamPath$|GoSSE$'
#   bench/ab.sh HEAD~3 ./diffapply 'Plan1MB$' 5
#
# REV is built from a clean export (git archive), the working tree as it is.
# Each round runs REV, then the working tree, each with -count 2. The
# benchmark runs in PKG's folder (testdata). Prints the lines of both with
# the load average before each run.
set -eu
if [ $# -lt 3 ]; then
	sed -n '2,14p' "$0" >&2
	exit 2
fi
rev=$1 pkg=$2 bench=$3 rounds=${4:-3}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || { echo "ab.sh: $rev is not a commit" >&2; exit 2; }
mkdir "$tmp/base"
git archive "$rev" | tar -x -C "$tmp/base"
(cd "$tmp/base" && go test -c -o "$tmp/base.test" "$pkg")
go test -c -o "$tmp/work.test" "$pkg"
short=$(git rev-parse --short "$rev")
i=0
while [ "$i" -lt "$rounds" ]; do
	i=$((i + 1))
	for v in base work; do
		label=$short
		[ "$v" = work ] && label="working tree"
		echo "# round $i, $label, load $(cut -d' ' -f1-3 /proc/loadavg)"
		(cd "$pkg" && "$tmp/$v.test" -test.run '^$' -test.bench "$bench" -test.count 2 -test.benchmem) | grep '^Benchmark'
	done
done
