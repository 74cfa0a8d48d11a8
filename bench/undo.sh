#!/bin/sh
# undo.sh: CPU of `smith undo` beside the `smith apply` it takes back, on
# the 1 MB diff of bench/apply.sh (25 files, about 2 175 hunks; LINES=43500
# for the 55 MB one), alternating in the same rounds (bench/abproc):
#
#   smith apply PATCH   (fresh workspace and state folder)
#   smith undo          (of that apply: a copy of a workspace and state
#                        folder taken right after it, restored before each run)
#
#   bench/undo.sh [ROUNDS]   (default 20)
#
# BASE=/path/to/an/older/smith adds its undo of its own apply of the same
# diff. Every undo must restore the workspace byte for byte: the script
# checks it after the rounds.
set -eu
rounds=${1:-20}
cd "$(dirname "$0")/.."
bin=${BIN:-${TMPDIR:-/tmp}/smith-bench}
mkdir -p "$bin"
CGO_ENABLED=0 go build -o "$bin/smith" ./cmd/smith
go build -o "$bin/abproc" ./bench/abproc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go run ./bench/apply/gen -dir "$work" ${LINES:+-lines "$LINES"}
cd "$work"
export GIT_CEILING_DIRECTORIES="$work"
s=$bin/smith
# Each binary's apply, kept at the paths its undos run in (the journal
# names its files by absolute path, and its layout is that binary's).
prep() { # TAG SMITH
	cp -a ws.orig "applied-$1"
	XDG_STATE_HOME=$work/state-$1 "$2" apply -C "applied-$1" patch.diff >/dev/null 2>&1
	mv "applied-$1" "applied-$1.keep"
	mv "state-$1" "state-$1.keep"
}
restore() { echo "rm -rf applied-$1 state-$1 && cp -a applied-$1.keep applied-$1 && cp -a state-$1.keep state-$1"; }
prep smith "$s"
[ -z "${BASE:-}" ] || prep base "$BASE"
setup="rm -rf ws state && cp -a ws.orig ws && $(restore smith)${BASE:+ && $(restore base)} && sync -f ws"
echo "## $(wc -c <patch.diff) bytes of diff, $(grep -c '^@@' patch.diff) hunks; $(uptime)"
"$bin/abproc" -rounds "$rounds" -dir "$work" -setup "$setup" -- \
	apply=env XDG_STATE_HOME="$work/state" "$s" apply -C ws patch.diff -- \
	undo=env XDG_STATE_HOME="$work/state-smith" "$s" undo -C applied-smith \
	${BASE:+-- base-undo=env XDG_STATE_HOME="$work/state-base" "$BASE" undo -C applied-base}
for tag in smith ${BASE:+base}; do
	b=$s
	[ "$tag" = smith ] || b=$BASE
	sh -c "$(restore "$tag")"
	XDG_STATE_HOME=$work/state-$tag "$b" undo -C "applied-$tag" 2>/dev/null
	diff -r ws.orig "applied-$tag" >/dev/null || { echo "$tag undo: the workspace is not the original" >&2; exit 1; }
done
echo "every undo restored the workspace byte for byte"
