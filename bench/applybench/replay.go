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

// An archived case (bench/failures/*.txtar, or one written by -failures) is
// a txtar archive: patch.diff, before/<path>... and want/<path>... (got/ is
// ignored). The comment is "key: value" lines; replay reads two keys:
//
//	root: <name>   the workspace directory's name (default "proj"); it matters
//	               for the extra-prefix kind
//	no final newline (txtar adds one): before/x want/x ...
//	               files whose last newline txtar added and replay removes
//
// "$ROOT" in patch.diff stands for the workspace's absolute path.
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
	noNL := map[string]bool{}
	for _, line := range strings.Split(string(a.Comment), "\n") {
		key, value, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch key {
		case "root":
			c.root = strings.TrimSpace(value)
		case "kind":
			c.kind = strings.TrimSpace(value)
		case "no final newline (txtar adds one)":
			for _, f := range strings.Fields(value) {
				noNL[f] = true
			}
		}
	}
	for _, f := range a.Files {
		data := f.Data
		if noNL[f.Name] {
			data = bytes.TrimSuffix(data, []byte("\n"))
		}
		switch dir, rel, _ := strings.Cut(f.Name, "/"); {
		case f.Name == "patch.diff":
			c.patch = data
		case dir == "before":
			c.before[rel] = data
		case dir == "want":
			c.after[rel] = data
		}
	}
	if c.patch == nil {
		return nil, fmt.Errorf("%s: no patch.diff", path)
	}
	return c, nil
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
