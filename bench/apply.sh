#!/bin/sh
# apply.sh: `smith apply` as a whole process beside `git apply` on the same
# diffs, alternating in the same rounds (see docs/benchmarks.md, "smith
# apply (target 3)"):
#
#   1. the 1 MB diff (25 files, 2 175 one-change hunks, bench/apply/gen),
#      on disk and on tmpfs (/dev/shm, workspace and smith's state folder:
#      an fsync costs nothing there, so the difference is the file system's
#      and fsync's share), with --check (parse and plan only), and go-diff's
#      parse alone as a whole process (bench/apply/parse: the floor of any
#      smith apply, which parses with go-diff first), and bench/apply/floor,
#      the least a Go program on go-diff does to apply the diff: plain (in
#      place, no fsync, as git apply writes) and durable (what an undoable,
#      crash-safe apply needs: a journal of the old texts, atomic writes,
#      fsync; and that with one syncfs instead of an fsync per file); the
#      floor's trees are checked against smith's first;
#   2. a one-hunk diff of one 50-line file, on disk and on tmpfs, with a Go
#      hello world as the floor of any Go process, and the two floors of 1;
#   3. fsyncs per apply (strace): their number and the time spent in them,
#      for the first apply in an empty state folder and for the next one;
#   4. a 50 MB diff (25 files of 43 500 lines): peak RSS of each tool, once
#      (skipped with HUGE=0).
#
#   bench/apply.sh [ROUNDS]      (default 15; needs git, strace for step 3)
#
# Every run gets a fresh copy of the workspace and an empty state folder
# (XDG_STATE_HOME: smith's journal and the engine's state), not measured.
# git apply runs outside any repository. Environment: BIN (binaries,
# default $TMPDIR/smith-bench), WORK (scratch on disk, default a new
# temporary folder), SHM (scratch on tmpfs, default /dev/shm).
set -eu
rounds=${1:-15}
cd "$(dirname "$0")/.."
bin=${BIN:-${TMPDIR:-/tmp}/smith-bench}
mkdir -p "$bin"
CGO_ENABLED=0 go build -o "$bin/smith" ./cmd/smith
CGO_ENABLED=0 go build -o "$bin/hello" ./bench/startup/hello
CGO_ENABLED=0 go build -o "$bin/parse" ./bench/apply/parse
CGO_ENABLED=0 go build -o "$bin/floor" ./bench/apply/floor
CGO_ENABLED=0 go build -o "$bin/hellofloor" ./bench/startup/hellofloor
go build -o "$bin/abproc" ./bench/abproc
work=${WORK:-$(mktemp -d)}
shm=$(mktemp -d "${SHM:-/dev/shm}/smith-apply.XXXXXX")
trap 'rm -rf "$shm"; [ -n "${WORK:-}" ] || rm -rf "$work"' EXIT
for c in big one huge; do rm -rf "$work/$c" && mkdir -p "$work/$c"; done
go run ./bench/apply/gen -dir "$work/big"
go run ./bench/apply/gen -dir "$work/one" -files 1 -lines 50 -every 50
go run ./bench/apply/gen -dir "$work/huge" -lines 43500
cp -a "$work/big" "$shm/big"
cp -a "$work/one" "$shm/one"
export GIT_CEILING_DIRECTORIES="$work:$shm" XDG_STATE_HOME="$work/state"
s=$bin/smith
# The floors must write what smith writes, or they measure something else.
for c in big one; do
	(cd "$work/$c" && for t in smith floor durable; do rm -rf "ws-$t" && cp -a ws.orig "ws-$t"; done &&
		"$s" apply -C ws-smith patch.diff >/dev/null 2>&1 &&
		"$bin/floor" -C ws-floor patch.diff &&
		"$bin/floor" -durable -journal "$work/journal" -C ws-durable patch.diff &&
		diff -r ws-smith ws-floor >/dev/null && diff -r ws-smith ws-durable >/dev/null &&
		rm -rf ws-smith ws-floor ws-durable "$work/journal" "$work/state") ||
		{ echo "apply.sh: bench/apply/floor and smith apply wrote different trees for $c" >&2; exit 1; }
done
floors() { # the two floors' commands for abproc, in the workspace ws
	echo "floor=$bin/floor -C ws patch.diff -- durable=$bin/floor -durable -journal $work/journal -C ws patch.diff" \
		"-- durable-syncfs=$bin/floor -durable -syncfs -journal $work/journal -C ws patch.diff"
}
# ratios: smith, its floors and git apply against each other, from the
# table abproc just printed (CPU medians).
ratios() {
	awk -F'|' '$2 ~ /^ [a-z-]+ $/ { gsub(/ /, "", $2); cpu[$2] = $3 }
		END {
			printf "CPU, ratio to git apply: smith %.2fx (target <= 1.5x), smith --check %.2fx, floor %.2fx, durable floor %.2fx (with one syncfs %.2fx)\n", cpu["smith"] / cpu["git"], cpu["smith-check"] / cpu["git"], cpu["floor"] / cpu["git"], cpu["durable"] / cpu["git"], cpu["durable-syncfs"] / cpu["git"]
			printf "smith / durable floor: %.2fx\n", cpu["smith"] / cpu["durable"]
			# The floor links go-diff alone; smith must link the libraries
			# it is required to build on, whose start-up hellofloor is.
			if ("hellofloor" in cpu) printf "smith / (durable floor + the required libraries start-up, hellofloor - hello): %.2fx\n", cpu["smith"] / (cpu["durable"] + cpu["hellofloor"] - cpu["hello"])
		}' "$work/table"
}
echo "## 1 MB diff: $(wc -c <"$work/big/patch.diff") bytes, $(grep -c '^@@' "$work/big/patch.diff") hunks, 25 files; $(uptime)"
# The tmpfs runs keep smith's state on tmpfs too (through env, whose exec
# is part of the measured process: a few hundredths of a millisecond).
"$bin/abproc" -rounds "$rounds" -dir "$work/big" \
	-setup "rm -rf ws $work/state $work/journal $shm/state && cp -a ws.orig ws && sync -f ws && rm -rf $shm/big/ws && cp -a $shm/big/ws.orig $shm/big/ws" -- \
	smith="$s" apply -C ws patch.diff -- git=git -C ws apply ../patch.diff -- \
	smith-tmpfs=env XDG_STATE_HOME="$shm/state" "$s" apply -C "$shm/big/ws" patch.diff -- git-tmpfs=git -C "$shm/big/ws" apply ../patch.diff -- \
	smith-check="$s" apply --check -C ws patch.diff -- git-check=git -C ws apply --check ../patch.diff -- \
	go-diff-parse="$bin/parse" patch.diff -- $(floors) -- hello="$bin/hello" 2>/dev/null | tee "$work/table"
ratios
echo
echo "## one-hunk diff; $(uptime)"
"$bin/abproc" -rounds "$((rounds * 10))" -dir "$work/one" \
	-setup "rm -rf ws $work/state $work/journal $shm/state && cp -a ws.orig ws && rm -rf $shm/one/ws && cp -a $shm/one/ws.orig $shm/one/ws" -- \
	smith="$s" apply -C ws patch.diff -- git=git -C ws apply ../patch.diff -- \
	smith-tmpfs=env XDG_STATE_HOME="$shm/state" "$s" apply -C "$shm/one/ws" patch.diff -- git-tmpfs=git -C "$shm/one/ws" apply ../patch.diff -- \
	smith-check="$s" apply --check -C ws patch.diff -- git-check=git -C ws apply --check ../patch.diff -- \
	$(floors) -- hello="$bin/hello" -- hellofloor="$bin/hellofloor" 2>/dev/null | tee "$work/table"
ratios
if command -v strace >/dev/null; then
	echo
	echo "## fsyncs per apply: calls, and seconds spent in them (strace -w); the wall time of the same run under strace"
	# fsyncs CMD...: runs CMD under strace and prints its fsync calls and time.
	fsyncs() {
		start=$(date +%s%N)
		strace -f -c -w -e trace=fsync,fdatasync -o "$work/strace" "$@" >/dev/null 2>&1
		end=$(date +%s%N)
		awk -v wall=$(((end - start) / 1000)) '$NF ~ /^(fsync|fdatasync)$/ { n += $4; s += $2 } END { printf "%d fsyncs, %.1f ms in fsync, %.1f ms wall\n", n, s * 1000, wall / 1000 }' "$work/strace"
	}
	for c in big one; do
		(cd "$work/$c" && rm -rf ws "$work/state" && cp -a ws.orig ws && sync -f ws &&
			echo "$c, smith, first apply (empty state folder): $(fsyncs "$s" apply -C ws patch.diff)" &&
			rm -rf ws && cp -a ws.orig ws && sync -f ws &&
			echo "$c, smith, next apply (same state folder): $(fsyncs "$s" apply -C ws patch.diff)" &&
			rm -rf ws && cp -a ws.orig ws && sync -f ws &&
			echo "$c, git apply: $(fsyncs git -C ws apply ../patch.diff)")
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
