#!/usr/bin/env bash
# Batch-mode Emacs tests: a plain LSP client (Emacs's eglot, as Debian
# ships it: emacs-nox 28 and elpa-eglot 1.9) against a real `smith serve`
# and the embedded upstream (`smith upstream`), in throw-away workspaces.
# eglot knows nothing of smith: everything goes through standard LSP
# (diagnostics, code actions, workspace/applyEdit, executeCommand).
#
#   SMITH_BIN=/abs/path/to/smith test/emacs/run.sh [name-filter]
#
# SMITH_TEST_KEEP=1 keeps the scratch directory (logs, workspaces).
# Prints one line per test and a closing "N passed, N failed"; exits
# non-zero when a test fails or something is missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

if ! command -v emacs >/dev/null 2>&1; then
	echo "emacs tests: emacs is not installed; install it (apt-get install -y emacs-nox elpa-eglot) or run .ci/run" >&2
	exit 1
fi
if ! emacs --batch --eval "(require 'eglot)" >/dev/null 2>&1; then
	echo "emacs tests: eglot is not installed; install it (apt-get install -y elpa-eglot) or run .ci/run" >&2
	exit 1
fi
# shellcheck source=../lib/suite.sh
. "$here/../lib/suite.sh"
suite_init emacs "Emacs's output in emacs.out, eglot's event log in events.log"
# A project root for project.el in each workspace.
mkdir -p "$tmp/ws/.git" "$tmp/ws-v2/.git"

# AgentSmithy v0 proposes diffs: smith and the editor apply them.
start_upstream v0 "$tmp/ws" v0
export SMITH_TEST_WS=$tmp/ws SMITH_TEST_URL=$URL
# v2 writes files itself: the open buffer must follow.
start_upstream v2 "$tmp/ws-v2" v2
export SMITH_TEST_WS_V2=$tmp/ws-v2 SMITH_TEST_URL_V2=$URL
export SMITH_BIN SMITH_TEST_FILTER=${1:-} SMITH_TEST_OUT=$tmp/result SMITH_TEST_EVENTS=$tmp/events.log

status=0
# timeout(1) turns a hung Emacs into a failure.
timeout 180 emacs --batch -l "$here/eglot-test.el" -f smith-test-main </dev/null >"$tmp/emacs.out" 2>&1 || status=$?
grep -E '^(ok|not ok|#)' "$tmp/emacs.out" || true

if [ ! -s "$tmp/result" ]; then
	echo "emacs tests: Emacs ended (status $status) before the suite finished; its output:" >&2
	tail -n 60 "$tmp/emacs.out" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
read -r passed failed <"$tmp/result"
if [ "$failed" -ne 0 ]; then
	echo "--- the end of Emacs's output:"
	tail -n 40 "$tmp/emacs.out"
	if [ -s "$tmp/events.log" ]; then
		echo "--- the end of eglot's events buffer:"
		tail -n 60 "$tmp/events.log"
	fi
	echo "---"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
