#!/bin/sh
# apply-corpus.sh: the corpus benchmark of smith apply against git apply and
# patch -p1 (see bench/README.md). Run it from anywhere:
#
#   bench/apply-corpus.sh PATH-TO-A-GIT-REPOSITORY [applybench flags...]
#
# Environment: OUT (reports, default bench/work), BIN (binaries, default
# $TMPDIR/smith-bench), TOOLS (default smith,git,patch), SMITH (a smith
# binary to use instead of building ./cmd/smith).
set -eu

if [ $# -lt 1 ]; then
	echo "usage: $0 REPOSITORY [applybench flags...]" >&2
	exit 2
fi
repo=$(cd "$1" && pwd)
shift
cd "$(dirname "$0")/.."

out=${OUT:-bench/work}
bin=${BIN:-${TMPDIR:-/tmp}/smith-bench}
tools=${TOOLS:-smith,git,patch}
mkdir -p "$out" "$bin"
rm -rf "$out/failures"

go build -o "$bin/applybench" ./bench/applybench
smith=${SMITH:-}
case ",$tools," in
*,smith,*)
	if [ -z "$smith" ]; then
		smith=$bin/smith
		# Without cgo the binary is static: no dynamic loader and libc at
		# every start, 0.4-1 ms less per process (docs/benchmarks.md).
		CGO_ENABLED=0 go build -o "$smith" ./cmd/smith
	fi
	;;
esac

echo "git: $(git --version)  patch: $(patch --version | head -n 1)  cores: $(nproc 2>/dev/null || echo ?)" >&2
"$bin/applybench" -repo "$repo" -smith "$smith" -tools "$tools" \
	-md "$out/apply-corpus.md" -json "$out/apply-corpus.json" -failures "$out/failures" "$@"
cat "$out/apply-corpus.md"
echo >&2
echo "reports: $out/apply-corpus.md $out/apply-corpus.json; failing smith cases: $out/failures/" >&2
