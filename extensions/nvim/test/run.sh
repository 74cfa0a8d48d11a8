#!/usr/bin/env bash
# Headless Neovim tests of smith.nvim against a real `smith serve` and the
# embedded upstream (`smith upstream`), in throw-away workspaces.
#
#   SMITH_BIN=/abs/path/to/smith extensions/nvim/test/run.sh [name-filter]
#
# SMITH_TEST_KEEP=1 keeps the scratch directory (logs, workspaces).
#
# Builds nothing: `make nvimtest` builds bin/smith and calls this script.
# Prints one line per test and a closing "N passed, N failed"; exits
# non-zero when a test fails or something is missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
plugin=$(dirname "$here")

if ! command -v nvim >/dev/null 2>&1; then
	echo "nvim tests: nvim is not installed; install it (apt-get install -y neovim) or run .ci/run" >&2
	exit 1
fi
# Neovim, smith and the upstreams keep their state in the scratch directory.
# shellcheck source=../../../test/lib/suite.sh
. "$here/../../../test/lib/suite.sh"
suite_init nvim "Neovim's stderr in nvim.err, the LSP log in cache/nvim/lsp.log"

# AgentSmithy v0 sends diffs and writes nothing: smith and the editor apply
# them (accept, reject, undo).
start_upstream main "$tmp/ws" v0
export SMITH_TEST_WS=$tmp/ws SMITH_TEST_URL=$URL
# The same, stalling after the first event of every turn, so that a turn is
# still running when the test cancels it.
start_upstream stall "$tmp/ws-stall" v0 --fault stall=30
export SMITH_TEST_WS_STALL=$tmp/ws-stall SMITH_TEST_URL_STALL=$URL
# v2 streams reasoning and writes files itself.
start_upstream v2 "$tmp/ws-v2" v2
export SMITH_TEST_WS_V2=$tmp/ws-v2 SMITH_TEST_URL_V2=$URL
# Oracle: one tool call reported three times (pending, running, done) and one
# that fails, replayed byte for byte.
start_upstream oracle "$tmp/ws-oracle" "" --dialect oracle --replay "$here/oracle-tool-status.sse"
export SMITH_TEST_WS_ORACLE=$tmp/ws-oracle SMITH_TEST_URL_ORACLE=$URL
export SMITH_BIN SMITH_TEST_FILTER=${1:-} SMITH_TEST_OUT=$tmp/result

status=0
# --clean: no user config or plugins; the minimal init puts this plugin on
# 'runtimepath'. timeout(1) turns a hung Neovim into a failure.
timeout 120 nvim --headless --clean -i NONE -n -u "$here/minimal_init.lua" \
	-c "lua require('smith_test').main()" </dev/null 2>"$tmp/nvim.err" || status=$?

if [ ! -s "$tmp/result" ]; then
	echo "nvim tests: Neovim ended (status $status) before the suite finished; its stderr:" >&2
	cat "$tmp/nvim.err" >&2
	echo "0 passed, 1 failed"
	exit 1
fi

# Neovim stops smith serve on exit (shutdown and exit, then SIGTERM): none
# may outlive it by more than a moment. The plugin starts each daemon in its
# workspace root, so ours are the smith processes whose working directory is
# inside $tmp (found through /proc, which needs no procps).
serve_pids() {
	local d cwd
	for d in /proc/[0-9]*; do
		cwd=$(readlink "$d/cwd" 2>/dev/null) || continue
		case $cwd in "$tmp"/*) ;; *) continue ;; esac
		case $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null) in
		*" serve "*) echo "${d#/proc/}" ;;
		esac
	done
}
for _ in $(seq 50); do
	leftover=$(serve_pids)
	[ -z "$leftover" ] && break
	sleep 0.1
done
read -r passed failed <"$tmp/result"
if [ -n "$leftover" ]; then
	echo "not ok - smith serve stops when Neovim exits (still running: $(echo $leftover))"
	for pid in $leftover; do kill "$pid" 2>/dev/null || true; done
	failed=$((failed + 1))
else
	echo "ok - smith serve stops when Neovim exits"
	passed=$((passed + 1))
fi
if [ "$failed" -ne 0 ] && [ -s "$XDG_CACHE_HOME/nvim/lsp.log" ]; then
	echo "--- the end of Neovim's LSP log (smith serve's stderr is logged there):"
	tail -n 40 "$XDG_CACHE_HOME/nvim/lsp.log"
	echo "---"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
