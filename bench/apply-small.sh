#!/bin/sh
# apply-small.sh: `smith apply` of a one-hunk diff (one 50-line file,
# bench/apply/gen -files 1 -lines 50 -every 50) as a whole process, where
# the engine's journal is most of what smith adds to its plan (see
# docs/benchmarks.md, "smith apply (target 3)"). Alternating in the same
# rounds (bench/abproc, CPU from the kernel's accounting of each child):
#
#   first   the apply in an empty state folder (as bench/apply.sh does),
#   next    the apply in a state folder that holds one apply already (the
#           common case: a workspace smith has written to before),
#   check   smith apply --check (parse and plan only),
#   version smith version and a Go hello world (the start-up floors),
#   git     git apply of the same diff, outside any repository,
#
# for smith built here and, with BASE (a smith binary built elsewhere, e.g.
# at an earlier commit), for that smith too. Then the fsyncs of a first and
# of a next apply, with the file each one syncs (strace -y).
#
#   bench/apply-small.sh [ROUNDS]          (default 100; needs git, strace)
#   BASE=/path/to/old/smith bench/apply-small.sh 150
set -eu
rounds=${1:-100}
cd "$(dirname "$0")/.."
bin=${BIN:-${TMPDIR:-/tmp}/smith-bench-small}
mkdir -p "$bin"
CGO_ENABLED=0 go build -o "$bin/smith" ./cmd/smith
CGO_ENABLED=0 go build -o "$bin/hello" ./bench/startup/hello
go build -o "$bin/abproc" ./bench/abproc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go run ./bench/apply/gen -dir "$work" -files 1 -lines 50 -every 50
export GIT_CEILING_DIRECTORIES="$work"
s=$bin/smith
# A state folder after one apply, for each smith: the "next" runs start
# from a copy of it.
seed() { # seed NAME SMITH
	rm -rf "$work/ws" && cp -a "$work/ws.orig" "$work/ws"
	XDG_STATE_HOME="$work/$1.seed" "$2" apply -C "$work/ws" "$work/patch.diff" >/dev/null 2>&1
}
seed new "$s"
set -- new-first=env XDG_STATE_HOME="$work/empty" "$s" apply -C ws patch.diff -- \
	new-next=env XDG_STATE_HOME="$work/new" "$s" apply -C ws patch.diff -- \
	new-check="$s" apply --check -C ws patch.diff
setup="rm -rf ws $work/empty $work/new $work/base && cp -a ws.orig ws && cp -a $work/new.seed $work/new"
if [ -n "${BASE:-}" ]; then
	seed base "$BASE"
	set -- "$@" -- base-first=env XDG_STATE_HOME="$work/empty" "$BASE" apply -C ws patch.diff -- \
		base-next=env XDG_STATE_HOME="$work/base" "$BASE" apply -C ws patch.diff -- \
		base-check="$BASE" apply --check -C ws patch.diff
	setup="$setup && cp -a $work/base.seed $work/base"
fi
echo "## one-hunk diff, $rounds rounds; $(uptime)"
"$bin/abproc" -rounds "$rounds" -dir "$work" -setup "$setup" -- "$@" -- \
	version="$s" version -- hello="$bin/hello" -- git=git -C ws apply ../patch.diff 2>/dev/null
echo "$(uptime)"
if command -v strace >/dev/null; then
	echo
	echo "## fsyncs of smith apply, in order (STATE: the workspace's state folder)"
	for run in first next; do
		rm -rf "$work/ws" "$work/st" && cp -a "$work/ws.orig" "$work/ws"
		[ $run = next ] && cp -a "$work/new.seed" "$work/st"
		XDG_STATE_HOME="$work/st" strace -f -qq -y -e trace=fsync,fdatasync -o "$work/strace" "$s" apply -C "$work/ws" "$work/patch.diff" >/dev/null 2>&1
		echo "$run: $(grep -c 'fsync' "$work/strace") fsyncs"
		sed -n 's/.*fsync(\([0-9]*\)<\(.*\)>).*/  \2/p' "$work/strace" | sed "s#$work/st/smith/[0-9a-f]*#STATE#; s#$work/st/smith#STATE/..#; s#$work/ws#WS#"
	done
fi
