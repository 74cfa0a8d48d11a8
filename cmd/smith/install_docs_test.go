package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInstallDocsWork checks the install lines a new user copies: the
// module is not published, so "go install …@latest" cannot work; a
// checkout's "go install ./cmd/smith" does, and its binary lands in
// $(go env GOPATH)/bin, which must be on PATH. The README also warns that
// the first make test downloads and builds for minutes.
func TestInstallDocsWork(t *testing.T) {
	docs := []string{"README.md", "extensions/nvim/README.md", "extensions/nvim/doc/smith.txt"}
	goInstall := regexp.MustCompile("go install ([^\\s`,)'\";]*cmd/smith[^\\s`,)'\";]*)")
	for _, d := range docs {
		b, err := os.ReadFile(filepath.Join("..", "..", d))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		lines := goInstall.FindAllStringSubmatch(text, -1)
		if len(lines) == 0 {
			t.Errorf("%s has no go install line for smith", d)
		}
		for _, l := range lines {
			if l[1] != "./cmd/smith" {
				t.Errorf("%s: %q does not install from a checkout (./cmd/smith)", d, l[0])
			}
		}
		if !strings.Contains(text, "$(go env GOPATH)/bin") {
			t.Errorf("%s does not say that $(go env GOPATH)/bin must be on PATH", d)
		}
	}
	// What the editor plugins tell a user whose smith is missing, and the
	// VS Code extension's install section, must not send them to @latest
	// either.
	for _, d := range []string{"extensions/vscode/README.md", "extensions/vscode/src/findSmith.ts", "extensions/vscode/package.json",
		"extensions/nvim/lua/smith/client.lua", "extensions/nvim/lua/smith/health.lua"} {
		b, err := os.ReadFile(filepath.Join("..", "..", d))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range goInstall.FindAllStringSubmatch(string(b), -1) {
			if l[1] != "./cmd/smith" {
				t.Errorf("%s: %q does not install from a checkout (./cmd/smith)", d, l[0])
			}
		}
	}
	readme, _ := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if !regexp.MustCompile(`(?s)first .make test.*several minutes`).Match(readme) {
		t.Error("README.md does not say that the first make test downloads and builds for several minutes")
	}
}
