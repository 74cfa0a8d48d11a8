#!/bin/sh
# apply.sh: `smith apply` as a whole process beside `git apply` on the same
# diffs, alternating in the same rounds (see docs/benchmarks.md, "smith apply
# against git apply"):
#
#   1. the 1 MB diff (25 files, 2 175 one-change hunks, bench/apply/gen),
#      on disk and on tmpfs (/dev/shm: an fsync costs nothing there, so the
#      difference is fsync's share), and --check (parse and plan only);
#   2. a one-hunk diff of one 50-line file, with a Go hello world as the
#      floor of any Go process;
#   3. a 50 MB diff (25 files of 43 500 lines): peak RSS of each tool, once.
#
#   bench/apply.sh [ROUNDS]      (default 15; needs git, strace for the fsync count)
#
# Every run gets a fresh copy of the workspace and an empty state folder
# (XDG_STATE_HOME: smith's journal and, since 3e23acd, the engine's state
# file, which keeps every applied change), not measured. git apply runs
# outside any repository. Environment: BIN (binaries, default
# $TMPDIR/smith-bench), WORK (scratch on disk, default a new temporary
# folder), SHM (scratch on tmpfs, default /dev/shm).
set -eu
rounds=${1:-15}
cd "$(dirname "$0")/.."
bin=${BIN:-${TMPDIR:-/tmp}/smith-bench}
mkdir -p "$bin"
CGO_ENABLED=0 go build -o "$bin/smith" ./cmd/smith
CGO_ENABLED=0 go build -o "$bin/hello" ./bench/startup/hello
go build -o "$bin/abproc" ./bench/abproc
work=${WORK:-$(mktemp -d)}
shm=$(mktemp -d "${SHM:-/dev/shm}/smith-apply.XXXXXX")
trap 'rm -rf "$shm"; [ -n "${WORK:-}" ] || rm -rf "$work"' EXIT
for c in big one huge; do rm -rf "$work/$c" && mkdir -p "$work/$c"; done
go run ./bench/apply/gen -dir "$work/big"
go run ./bench/apply/gen -dir "$work/one" -files 1 -lines 50 -every 50
go run ./bench/apply/gen -dir "$work/huge" -lines 43500
cp -a "$work/big" "$shm/big"
export GIT_CEILING_DIRECTORIES="$work:$shm" XDG_STATE_HOME="$work/state"
s=$bin/smith
echo "## 1 MB diff: $(wc -c <"$work/big/patch.diff") bytes, $(grep -c '^@@' "$work/big/patch.diff") hunks, 25 files; $(uptime)"
"$bin/abproc" -rounds "$rounds" -dir "$work/big" \
	-setup "rm -rf ws $work/state && cp -a ws.orig ws && sync -f ws && rm -rf $shm/big/ws && cp -a $shm/big/ws.orig $shm/big/ws" -- \
	smith="$s" apply -C ws patch.diff -- git=git -C ws apply ../patch.diff -- \
	smith-tmpfs="$s" apply -C "$shm/big/ws" patch.diff -- git-tmpfs=git -C "$shm/big/ws" apply ../patch.diff -- \
	smith-check="$s" apply --check -C ws patch.diff -- git-check=git -C ws apply --check ../patch.diff 2>/dev/null
echo
echo "## one-hunk diff; $(uptime)"
"$bin/abproc" -rounds "$((rounds * 10))" -dir "$work/one" -setup "rm -rf ws $work/state && cp -a ws.orig ws" -- \
	smith="$s" apply -C ws patch.diff -- git=git -C ws apply ../patch.diff -- \
	smith-check="$s" apply --check -C ws patch.diff -- git-check=git -C ws apply --check ../patch.diff -- \
	hello="$bin/hello" 2>/dev/null
if command -v strace >/dev/null; then
	echo
	echo "## fsync calls per apply"
	for c in big one; do
		(cd "$work/$c" && rm -rf ws "$work/state" && cp -a ws.orig ws && sync -f ws &&
			strace -f -c -e trace=fsync,fdatasync,sync_file_range -o "$work/strace" "$s" apply -C ws patch.diff >/dev/null 2>&1 &&
			echo "$c: smith $(awk '$NF ~ /^(fsync|fdatasync)$/ { n += $4 } END { print n + 0 }' "$work/strace")" &&
			rm -rf ws && cp -a ws.orig ws &&
			strace -f -c -e trace=fsync,fdatasync -o "$work/strace" git -C ws apply ../patch.diff >/dev/null 2>&1 &&
			echo "$c: git apply $(awk '$NF ~ /^(fsync|fdatasync)$/ { n += $4 } END { print n + 0 }' "$work/strace")")
	done
fi
[ "${HUGE:-1}" = 0 ] && exit 0
echo
echo "## 50 MB diff: $(wc -c <"$work/huge/patch.diff") bytes, $(grep -c '^@@' "$work/huge/patch.diff") hunks; peak RSS (KiB), CPU s; $(uptime)"
cd "$work/huge"
for t in smith git; do
	rm -rf ws "$work/state" && cp -a ws.orig ws && sync -f ws
	if [ $t = smith ]; then set -- "$s" apply -C ws patch.diff; else set -- git -C ws apply ../patch.diff; fi
	/usr/bin/time -f "$t: %M KiB peak RSS, %U s user, %S s system, %e s wall" "$@" >/dev/null 2>"$work/time" || true
	tail -1 "$work/time"
done
echo "diff size: $(($(wc -c <patch.diff) / 1024)) KiB; target: smith's peak RSS <= 3x that"
