#!/usr/bin/env bash
# Regenerates the screenshots in docs/ from the tests (never by hand): the chat view alone in
# headless Chromium, and the real code-server workbench of the end-to-end test (the chat after
# a turn, the native diff with its per-hunk CodeLenses, the diff after hunk 1 was accepted,
# a proposal in conflict with an unsaved edit, the one notification of a serve that cannot start
# and the output it shows).
# Run from anywhere; needs what `make vscodetest` needs.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$here/../.." && pwd)
shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT
(cd "$repo" && CGO_ENABLED=0 go build -o bin/smith ./cmd/smith)
cd "$here"
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run --silent package
node esbuild.mjs
SMITH_BIN="$repo/bin/smith" SMITH_SCREENSHOTS="$shots" node --test out/test/webview/ out/test/e2e/
for f in webview-chat.png chat.png diff-review.png diff-hunk1-accepted.png conflict.png state-dir-refused.png state-dir-output.png; do
	cp "$shots/$f" "docs/$f"
done
ls -l docs/*.png
