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

// TestDocsRunRealTests: a "go test ./PKG -run NAME" that the docs tell a
// reader to type must run something; tests move between packages, and
// "no tests to run" passes silently.
func TestDocsRunRealTests(t *testing.T) {
	line := regexp.MustCompile(`go test (\./[^\s` + "`" + `]*) [^` + "`" + `\n]*?-run ('[^']*'|[^\s` + "`" + `]+)`)
	funcs := regexp.MustCompile(`(?m)^func (Test\w*)\(`)
	docs, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	docs = append(docs, filepath.Join("..", "..", "README.md"))
	for _, d := range docs {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range line.FindAllStringSubmatch(string(b), -1) {
			pattern := strings.Trim(m[2], "'")
			if pattern == "^$" {
				continue // benchmarks and fuzzing only
			}
			re, err := regexp.Compile(pattern)
			if err != nil {
				t.Errorf("%s: %q: -run %s is not a regexp: %v", d, m[0], pattern, err)
				continue
			}
			tests, _ := filepath.Glob(filepath.Join("..", "..", m[1], "*_test.go"))
			found := false
			for _, f := range tests {
				src, _ := os.ReadFile(f)
				for _, fn := range funcs.FindAllStringSubmatch(string(src), -1) {
					found = found || re.MatchString(fn[1])
				}
			}
			if !found {
				t.Errorf("%s: %q runs no test: no Test function of %s matches %s", filepath.Base(d), m[0], m[1], pattern)
			}
		}
	}
}

// TestCLIDocsEveryCommand: README.md sends readers to docs/cli.md for
// "every command"; each one smith has gets a heading there.
func TestCLIDocsEveryCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	var headings []string
	for l := range strings.Lines(string(b)) {
		if strings.HasPrefix(l, "## ") {
			headings = append(headings, l)
		}
	}
	root := newRootCmdFor(&IOStreams{}, nil)
	for _, c := range root.Commands() {
		name := c.Name()
		if c.Hidden || name == "help" || name == "version" {
			continue
		}
		word := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
		found := false
		for _, h := range headings {
			found = found || word.MatchString(h)
		}
		if !found {
			t.Errorf("docs/cli.md has no heading for smith %s", name)
		}
	}
}
