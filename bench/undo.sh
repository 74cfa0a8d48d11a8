#!/bin/sh
# undo.sh: CPU of `smith undo` beside the `smith apply` it takes back, on
# the 1 MB diff of bench/apply.sh (25 files, about 2 175 hunks; LINES=43500
# for the 55 MB one), alternating in the same rounds (bench/abproc):
#
#   smith apply PATCH   (fresh workspace and state folder)
#   smith undo          (of that apply: a copy of the workspace and state
#                        folder taken right after it, restored before each run)
#
#   bench/undo.sh [ROUNDS]   (default 20)
#
# BASE=/path/to/an/older/smith adds its undo of the same apply (the
# journal's layout must be the one this smith writes). Both undos must
# restore the workspace byte for byte: the script checks it after the
# rounds.
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
# The applied workspace and its state, at the paths the undos run in (the
# journal names its files by absolute path).
cp -a ws.orig applied
XDG_STATE_HOME=$work/applied-state "$s" apply -C applied patch.diff >/dev/null 2>&1
mv applied applied.keep
mv applied-state applied-state.keep
echo "## $(wc -c <patch.diff) bytes of diff, $(grep -c '^@@' patch.diff) hunks; $(uptime)"
"$bin/abproc" -rounds "$rounds" -dir "$work" \
	-setup "rm -rf ws state applied applied-state && cp -a ws.orig ws && cp -a applied.keep applied && cp -a applied-state.keep applied-state && sync -f ws applied" -- \
	apply=env XDG_STATE_HOME="$work/state" "$s" apply -C ws patch.diff -- \
	undo=env XDG_STATE_HOME="$work/applied-state" "$s" undo -C applied \
	${BASE:+-- base-undo=env XDG_STATE_HOME="$work/applied-state" "$BASE" undo -C applied} 2>/dev/null
for b in "$s" ${BASE:+"$BASE"}; do
	rm -rf applied applied-state && cp -a applied.keep applied && cp -a applied-state.keep applied-state
	XDG_STATE_HOME=$work/applied-state "$b" undo -C applied 2>/dev/null
	diff -r ws.orig applied >/dev/null || { echo "$b undo: the workspace is not the original" >&2; exit 1; }
done
echo "every undo restored the workspace byte for byte"
