#!/bin/sh
# apply-memory.sh: peak RSS of `smith apply` on a 50 MB diff beside git
# apply, alternating in the same rounds (docs/benchmarks.md, "smith apply
# (target 3)", memory): the diff of bench/apply/gen with 43 500 lines per
# file (25 files, 108 750 hunks), applied with
#
#   smith apply --check PATCH        (parse and plan: the diff read from a file)
#   smith apply --check - < PATCH    (from standard input)
#   smith apply PATCH                (written through the engine, fresh state folder)
#   smith undo                       (of that apply: every file taken back)
#   git apply --check / git apply    (outside any repository)
#
#   bench/apply-memory.sh [ROUNDS]   (default 3)
#
# BASE=/path/to/an/older/smith adds its rows (the same commands) for an A/B;
# each binary undoes its own apply. UNDO=1 runs only the apply and undo
# rows (no --check, no git apply).
# Peak RSS and CPU come from /usr/bin/time (GNU time, -f %M). The target of
# issue #17 is smith's peak RSS <= 3x the diff's size.
set -eu
rounds=${1:-3}
cd "$(dirname "$0")/.."
bin=${BIN:-${TMPDIR:-/tmp}/smith-bench}
mkdir -p "$bin"
CGO_ENABLED=0 go build -o "$bin/smith" ./cmd/smith
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/huge"
go run ./bench/apply/gen -dir "$work/huge" -lines 43500
cd "$work/huge"
export GIT_CEILING_DIRECTORIES="$work"
size=$(($(wc -c <patch.diff) / 1024))
echo "## 50 MB diff: $size KiB, $(grep -c '^@@' patch.diff) hunks; peak RSS KiB (x the diff), CPU s; $(uptime)"
one() { # NAME COMMAND...: one run on a fresh copy of the workspace
	name=$1
	shift
	rm -rf ws state && cp -a ws.orig ws && sync -f ws
	XDG_STATE_HOME=$work/huge/state /usr/bin/time -f "%M %U %S" "$@" >/dev/null 2>"$work/time" </dev/null || true
	tail -1 "$work/time" | awk -v n="$name" -v s="$size" '{ printf "%-22s %8d KiB  %5.2fx  CPU %.2f s\n", n, $1, $1 / s, $2 + $3 }'
}
undo() { # NAME SMITH: smith undo of the apply just run (same workspace and state)
	XDG_STATE_HOME=$work/huge/state /usr/bin/time -f "%M %U %S" "$2" undo -C ws >/dev/null 2>"$work/time" </dev/null || true
	tail -1 "$work/time" | awk -v n="$1" -v s="$size" '{ printf "%-22s %8d KiB  %5.2fx  CPU %.2f s\n", n, $1, $1 / s, $2 + $3 }'
	if ! diff -r ws ws.orig >/dev/null; then
		echo "$1: the workspace after smith undo is not the original" >&2
		exit 1
	fi
}
stdin() { # SMITH: --check from standard input
	rm -rf ws state && cp -a ws.orig ws
	/usr/bin/time -f "%M %U %S" "$1" apply --check -C ws - <patch.diff >/dev/null 2>"$work/time" || true
	tail -1 "$work/time" | awk -v n="$2" -v s="$size" '{ printf "%-22s %8d KiB  %5.2fx  CPU %.2f s\n", n, $1, $1 / s, $2 + $3 }'
}
for r in $(seq "$rounds"); do
	echo "# round $r"
	for s in "$bin/smith" ${BASE:+"$BASE"}; do
		tag=smith
		[ "$s" = "$bin/smith" ] || tag=base
		if [ -z "${UNDO:-}" ]; then
			one "$tag --check" "$s" apply --check -C ws patch.diff
			stdin "$s" "$tag --check stdin"
		fi
		one "$tag apply" "$s" apply -C ws patch.diff
		undo "$tag undo" "$s"
	done
	[ -n "${UNDO:-}" ] && continue
	one "git apply --check" git -C ws apply --check ../patch.diff
	one "git apply" git -C ws apply ../patch.diff
done
echo "target: smith's peak RSS <= 3x the diff ($((size * 3)) KiB)"
