package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Outcomes of one tool on one case.
const (
	outcomeExact         = "exact"          // success, and every file equals the expected one
	outcomeSilentWrong   = "silent-wrong"   // success, but some file differs, is missing or is extra
	outcomeRefused       = "refused"        // failure, and the files are as they were
	outcomeFailedChanged = "failed-changed" // failure, but files were changed anyway
)

// tool is an applier under test, run as a whole process in the workspace
// root with the patch file (which lies outside the workspace) as argument.
type tool struct {
	name string
	args func(patch string) []string
	env  []string
}

// newTools returns the tools named in names, in that order. smith is the
// path of the smith binary.
func newTools(names []string, smith, home, root string) ([]tool, error) {
	isolated := append(gitEnv(),
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"),
		// Outside any repository git apply patches plain files; the ceiling
		// keeps it from finding one above the workspace.
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(root),
	)
	var tools []tool
	for _, n := range names {
		switch n {
		case "smith":
			if smith == "" {
				return nil, errors.New("tool smith needs -smith PATH")
			}
			// Tools run in the workspace, so a relative path would break.
			if strings.ContainsRune(smith, filepath.Separator) {
				abs, err := filepath.Abs(smith)
				if err != nil {
					return nil, err
				}
				smith = abs
			}
			tools = append(tools, tool{n, func(p string) []string { return []string{smith, "apply", p} }, isolated})
		case "git":
			tools = append(tools, tool{"git apply", func(p string) []string { return []string{"git", "apply", p} }, isolated})
		case "patch":
			tools = append(tools, tool{"patch -p1", func(p string) []string {
				return []string{"patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch",
					"--reject-file=-", "--quiet", "-i", p}
			}, isolated})
		default:
			return nil, fmt.Errorf("unknown tool %q (want smith, git or patch)", n)
		}
	}
	return tools, nil
}

// result is what one tool did with one case.
type result struct {
	Tool    string  `json:"tool"`
	Outcome string  `json:"outcome"`
	Exit    int     `json:"exit"`
	Ms      float64 `json:"ms"`
	Stderr  string  `json:"stderr,omitempty"` // the first lines, for failed and wrong outcomes
	// Unstable is set when repeated runs did not all end the same way.
	Unstable bool `json:"unstable,omitempty"`

	got map[string][]byte // the workspace after the run
}

// workspace is the one directory every case and tool is applied in: it is
// emptied and filled with the case's files before each run, so that an
// absolute path in a damaged diff stays valid for every tool.
type workspace struct {
	root    string   // absolute; its base name is the project's name
	patch   string   // the patch file, next to root
	ignored []string // directory names a tool may keep state in, left out of comparisons
	timeout time.Duration
}

// reset makes the workspace hold exactly files. The files are flushed to
// disk before the tool runs: a tool that calls fsync (smith journals its
// writes) would otherwise also pay for writing back the harness's own files.
func (w *workspace) reset(files map[string][]byte) error {
	if err := os.RemoveAll(w.root); err != nil {
		return fmt.Errorf("reset workspace: %w", err)
	}
	if err := os.MkdirAll(w.root, 0o755); err != nil {
		return fmt.Errorf("reset workspace: %w", err)
	}
	for p, b := range files {
		if err := writeSynced(filepath.Join(w.root, filepath.FromSlash(p)), b); err != nil {
			return fmt.Errorf("reset workspace: %w", err)
		}
	}
	return nil
}

func writeSynced(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// snapshot reads every regular file under the workspace root.
func (w *workspace) snapshot() (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(w.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != w.root && slices.Contains(w.ignored, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(w.root, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read workspace: %w", err)
	}
	return files, nil
}

// run applies patch with t to a fresh copy of before and classifies the
// result against after. Only the tool's process is timed.
func (w *workspace) run(ctx context.Context, t tool, patch []byte, before, after map[string][]byte) (*result, error) {
	if err := w.reset(before); err != nil {
		return nil, err
	}
	if err := writeSynced(w.patch, patch); err != nil {
		return nil, fmt.Errorf("write patch: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	argv := t.args(w.patch)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = w.root, t.env
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr // patch reports on stdout

	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)

	r := &result{Tool: t.name, Ms: float64(elapsed.Microseconds()) / 1000}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		r.Exit = exitErr.ExitCode()
	default:
		return nil, fmt.Errorf("run %s: %w", t.name, err)
	}
	if r.got, err = w.snapshot(); err != nil {
		return nil, err
	}
	r.Outcome = classify(r.Exit == 0, r.got, before, after)
	if r.Outcome != outcomeExact {
		msg := strings.ReplaceAll(stderr.String(), w.patch, "$PATCH")
		r.Stderr = firstLines(strings.ReplaceAll(msg, w.root, "$ROOT"), 20)
	}
	return r, nil
}

// runRepeated runs a case n times, each on a fresh workspace, and keeps the
// first run's outcome with the fastest run's time: on a shared machine the
// fastest run is the one least disturbed by other load.
func (w *workspace) runRepeated(ctx context.Context, t tool, patch []byte, before, after map[string][]byte, n int) (*result, error) {
	var first *result
	for i := 0; i < max(1, n); i++ {
		r, err := w.run(ctx, t, patch, before, after)
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = r
			continue
		}
		first.Ms = min(first.Ms, r.Ms)
		if r.Outcome != first.Outcome || r.Exit != first.Exit {
			first.Unstable = true
		}
	}
	return first, nil
}

// classify names the outcome of a run from the tool's verdict and the files
// it left.
func classify(ok bool, got, before, after map[string][]byte) string {
	switch {
	case ok && sameFiles(got, after):
		return outcomeExact
	case ok:
		return outcomeSilentWrong
	case sameFiles(got, before):
		return outcomeRefused
	default:
		return outcomeFailedChanged
	}
}

func sameFiles(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

func firstLines(s string, n int) string {
	lines := bytes.SplitN([]byte(s), []byte("\n"), n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return string(bytes.TrimSpace(bytes.Join(lines, []byte("\n"))))
}
