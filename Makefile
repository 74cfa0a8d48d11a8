# smith — every test is one command: make test
GO ?= go
NVIM_TESTS := extensions/nvim/test/run.sh
EMACS_TESTS := test/emacs/run.sh
ACP_NODE := acp/testdata/node
ACP_ACPX := acp/testdata/acpx
VSCODE_DIR := extensions/vscode

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test vet lint gotest nvimtest emacstest vscodetest acptest build install bench fuzz

test: vet lint gotest nvimtest emacstest vscodetest acptest

vet:
	$(GO) vet ./...

# staticcheck, pinned, fetched through the module proxy on first use.
lint:
	$(GO) run $(STATICCHECK) ./...

gotest:
	$(GO) test -count=1 -timeout 12m ./...

# The Neovim suite runs a real headless Neovim against a real smith serve.
# .ci/run installs Neovim with apt-get when it is missing; the script only checks.
nvimtest: build
	@if [ -x $(NVIM_TESTS) ]; then SMITH_BIN=$(CURDIR)/bin/smith $(NVIM_TESTS); else echo "nvim tests: none yet"; fi

# A plain LSP client: batch-mode Emacs with eglot against a real smith serve.
# .ci/run installs emacs-nox and elpa-eglot when they are missing.
emacstest: build
	SMITH_BIN=$(CURDIR)/bin/smith $(EMACS_TESTS)

# The VS Code extension: typecheck, bundle, package the .vsix, then its Node tests (a real
# smith serve + upstream), the chat view in headless Chromium, and one end-to-end run in a
# real code-server workbench (built once into a cache outside the clone: see
# extensions/vscode/test/e2e/install-code-server.sh). .ci/run installs Node, npm and chromium.
vscodetest: build
	cd $(VSCODE_DIR) && { [ -d node_modules ] || npm ci --no-audit --no-fund; } \
		&& npx tsc --noEmit -p . && npm run --silent package && node esbuild.mjs \
		&& SMITH_BIN=$(CURDIR)/bin/smith node --test out/test/node/ out/test/webview/ out/test/e2e/

# smith acp against two more independent ACP clients: the official TypeScript
# SDK and acpx, a command-line client (each pinned by its lockfile; npm ci
# installs exactly it; acpx brings the Node 22 it needs). The Go SDK's client
# drives it in gotest (go test ./acp). .ci/run installs Node and npm when missing.
acptest: build
	cd $(ACP_NODE) && npm ci --no-audit --no-fund --loglevel=error && SMITH_BIN=$(CURDIR)/bin/smith node test.mjs
	cd $(ACP_ACPX) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error && SMITH_BIN=$(CURDIR)/bin/smith node test.mjs

# Static (no cgo): smith needs nothing from C, and starts ~1 ms sooner without
# the dynamic loader (docs/benchmarks.md, "Where smith's time goes").
build:
	CGO_ENABLED=0 $(GO) build -o bin/smith ./cmd/smith

install:
	CGO_ENABLED=0 $(GO) install ./cmd/smith

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
