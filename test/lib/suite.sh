# Set-up shared by the editor suites that run a real `smith upstream` and
# `smith serve` in throw-away workspaces (test/emacs/run.sh,
# extensions/nvim/test/run.sh). Sourced by them, not run: it defines
# functions and sets nothing until suite_init is called.

# suite_init NAME KEPT: checks SMITH_BIN (made absolute), makes the scratch
# directory $tmp and points XDG_*, HOME and TMPDIR into it, so that the
# editor, smith and the upstreams keep their state there. On exit it stops
# what start_upstream started and removes $tmp; with SMITH_TEST_KEEP=1 it
# keeps $tmp and says so, KEPT naming what is worth reading in it.
# NAME prefixes every message ("NAME tests: ...") and names the make target
# ("make NAMEtest").
suite_init() {
	suite_name=$1 suite_kept=$2
	if [ -z "${SMITH_BIN:-}" ]; then
		echo "$suite_name tests: SMITH_BIN is not set; run 'make ${suite_name}test' or SMITH_BIN=\$PWD/bin/smith $0" >&2
		exit 1
	fi
	case $SMITH_BIN in /*) ;; *) SMITH_BIN=$PWD/$SMITH_BIN ;; esac
	if [ ! -x "$SMITH_BIN" ]; then
		echo "$suite_name tests: SMITH_BIN=$SMITH_BIN is not an executable; build it with 'make build'" >&2
		exit 1
	fi

	tmp=$(mktemp -d "${TMPDIR:-/tmp}/smith-$suite_name-test.XXXXXX")
	tmp=$(cd "$tmp" && pwd -P)
	pids=()
	trap suite_cleanup EXIT

	export XDG_STATE_HOME=$tmp/state XDG_CONFIG_HOME=$tmp/config XDG_DATA_HOME=$tmp/data XDG_CACHE_HOME=$tmp/cache
	export HOME=$tmp/home TMPDIR=$tmp/tmp
	mkdir -p "$HOME" "$TMPDIR"
}

# suite_cleanup stops the upstreams and removes (or keeps) $tmp.
suite_cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [ -n "${SMITH_TEST_KEEP:-}" ]; then
		echo "$suite_name tests: kept $tmp ($suite_kept)" >&2
	else
		rm -rf "$tmp"
	fi
}

# start_upstream NAME WORKSPACE PROTOCOL [flags...]: starts `smith upstream`
# on WORKSPACE (PROTOCOL "" for the other dialects, chosen by the flags)
# and sets URL to the base URL it prints as its first stdout line.
start_upstream() {
	local name=$1 ws=$2 protocol=$3
	shift 3
	mkdir -p "$ws"
	local pflag=(--protocol "$protocol")
	[ -z "$protocol" ] && pflag=()
	"$SMITH_BIN" upstream --workspace "$ws" --addr 127.0.0.1:0 "${pflag[@]}" "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.log" &
	pids+=($!)
	URL=
	for _ in $(seq 100); do
		URL=$(head -n 1 "$tmp/$name.out" 2>/dev/null || true)
		[ -n "$URL" ] && break
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$URL" ]; then
		echo "$suite_name tests: '$SMITH_BIN upstream' did not print its URL; its log:" >&2
		cat "$tmp/$name.log" >&2
		exit 1
	fi
}
