package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/txtar"
)

// An archived case (bench/failures/*.txtar, or one written by -failures)
// uses the layout of diffapply's case suite (diffapply/testdata/cases), so
// it can be copied there as a test:
//
//	-- diff --       the patch; "$ROOT" stands for the workspace's absolute path
//	-- in/PATH --    a file before
//	-- out/PATH --   a file expected after; files not listed must not exist
//	-- gone --       paths the patch deletes (informative; out/ decides)
//	-- got/PATH --   a dumped case only: what the tool left (ignored here)
//
// A name ending in .nonl loses its final newline (txtar adds one to every
// file), one ending in .crlf gets CRLF line ends. The comment is free text; replay reads two "key: value" lines from
// it: "root: NAME", the workspace directory's name (default "proj"; the
// extra-prefix kind depends on it), and "kind: KIND".
const rootPlaceholder = "$ROOT"

// archived is a case read back from a txtar archive.
type archived struct {
	name          string
	root          string
	kind          string
	patch         []byte
	before, after map[string][]byte
}

func readArchive(path string) (*archived, error) {
	a, err := txtar.ParseFile(path)
	if err != nil {
		return nil, err
	}
	c := &archived{name: filepath.Base(path), root: "proj", before: map[string][]byte{}, after: map[string][]byte{}}
	for _, line := range strings.Split(string(a.Comment), "\n") {
		switch key, value, _ := strings.Cut(line, ": "); key {
		case "root":
			c.root = strings.TrimSpace(value)
		case "kind":
			c.kind = strings.TrimSpace(value)
		}
	}
	for _, f := range a.Files {
		name, data := decodeName(f.Name, f.Data)
		switch dir, rel, _ := strings.Cut(name, "/"); {
		case name == "diff":
			c.patch = data
		case dir == "in":
			c.before[rel] = data
		case dir == "out":
			c.after[rel] = data
		}
	}
	if c.patch == nil {
		return nil, fmt.Errorf("%s: no diff section", path)
	}
	return c, nil
}

// Name suffixes of archived files, as in diffapply's case suite: .nonl
// drops the final newline txtar adds, .crlf turns every "\n" into "\r\n";
// the outermost suffix applies first.
const (
	nonlSuffix = ".nonl"
	crlfSuffix = ".crlf"
)

func decodeName(name string, data []byte) (string, []byte) {
	for {
		if n, ok := strings.CutSuffix(name, nonlSuffix); ok {
			name, data = n, bytes.TrimSuffix(data, []byte("\n"))
		} else if n, ok := strings.CutSuffix(name, crlfSuffix); ok {
			name, data = n, toCRLF(data)
		} else {
			return name, data
		}
	}
}

// replay applies archived cases with every tool and prints one Markdown row
// per case. It is how a fix in diffapply is checked against bench/failures.
func replay(ctx context.Context, c *config, paths []string, out io.Writer) error {
	work, err := os.MkdirTemp(c.work, "applybench-replay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fmt.Fprintf(out, "| case | kind |")
	for _, t := range c.tools {
		fmt.Fprintf(out, " %s |", t)
	}
	fmt.Fprintf(out, "\n|---|---|%s\n", strings.Repeat("---|", len(c.tools)))
	for _, p := range paths {
		ac, err := readArchive(p)
		if err != nil {
			return err
		}
		ws := &workspace{
			root:    filepath.Join(work, "ws", ac.root),
			patch:   filepath.Join(work, "ws", "patch.diff"),
			ignored: c.ignored,
			timeout: c.timeout,
		}
		tools, err := newTools(c.tools, c.smith, filepath.Join(work, "home"), ws.root)
		if err != nil {
			return err
		}
		patch := bytes.ReplaceAll(ac.patch, []byte(rootPlaceholder), []byte(filepath.ToSlash(ws.root)))
		fmt.Fprintf(out, "| %s | %s |", ac.name, orDash(ac.kind))
		for _, t := range tools {
			res, err := ws.run(ctx, t, patch, ac.before, ac.after)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			fmt.Fprintf(out, " %s (exit %d) |", res.Outcome, res.Exit)
		}
		fmt.Fprintln(out)
	}
	return nil
}
