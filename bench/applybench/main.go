// Command applybench is the corpus benchmark of smith's diff applier. It
// takes commits of a local git repository, applies each commit's diff to the
// parent's files with every tool under test (smith apply, git apply, patch
// -p1), once as git wrote it and once with one kind of the damage chat models
// do to diffs, and compares the files each tool leaves byte for byte with
// the commit's. It prints one Markdown table with both sets side by side and
// can write a JSON summary and, for failing cases, txtar reproductions.
//
// See bench/README.md for how to run it and what the columns mean.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// config holds the command line.
type config struct {
	repo, rev, name string
	n, repeat       int
	seed            uint64
	smith           string
	tools, sets     []string
	kinds           []string
	work            string
	mdOut, jsonOut  string
	failures        string
	dump            []string
	ignored         []string
	lim             limits
	timeout         time.Duration
	replay          []string // archived cases to replay instead of sampling a repository
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("applybench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	var tools, sets, kinds, dump, ignored string
	replayMode := false
	fs.StringVar(&c.repo, "repo", "", "local git repository (work tree or bare) to take commits from (required)")
	fs.StringVar(&c.rev, "rev", "HEAD", "revision whose history is sampled")
	fs.StringVar(&c.name, "name", "", "public name of the repository for the report, e.g. github.com/owner/repo (default: its directory name)")
	fs.IntVar(&c.n, "n", 300, "number of commits")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the commit sample and of the damage")
	fs.IntVar(&c.repeat, "repeat", 3, "runs of each tool per case; the time reported is the fastest")
	fs.StringVar(&c.smith, "smith", "", "path of the smith binary (needed by -tools smith)")
	fs.StringVar(&tools, "tools", "smith,git,patch", "tools to compare, in table order: smith, git, patch")
	fs.StringVar(&sets, "sets", "real,damaged", "case sets to run: real, damaged")
	fs.StringVar(&kinds, "kinds", strings.Join(allKinds(), ","), "damage kinds to cycle through; also the extra kinds "+strings.Join(extraKinds(), ", ")+", or none (to check the harness)")
	fs.StringVar(&c.work, "work", "", "scratch directory (default: a new temporary directory, removed at the end)")
	fs.StringVar(&c.mdOut, "md", "-", "where to write the Markdown report (- for stdout)")
	fs.StringVar(&c.jsonOut, "json", "", "where to write the JSON summary with every case")
	fs.StringVar(&c.failures, "failures", "", "directory to write a txtar per non-exact case of the -dump tools")
	fs.StringVar(&dump, "dump", "smith", "tools whose non-exact cases go to -failures")
	fs.StringVar(&ignored, "ignore", ".smith", "directory names in the workspace where tools may keep state; not compared")
	fs.IntVar(&c.lim.maxFiles, "max-files", 40, "skip commits touching more files")
	fs.IntVar(&c.lim.maxDiffBytes, "max-diff-bytes", 256<<10, "skip commits with a larger diff")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "time limit of one tool process")
	fs.BoolVar(&replayMode, "replay", false, "replay the txtar cases named as arguments (e.g. bench/failures/*.txtar) instead of sampling -repo")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case replayMode && fs.NArg() > 0:
		c.replay = fs.Args()
	case replayMode || c.repo == "" || fs.NArg() > 0:
		fs.Usage()
		return nil, errors.New("usage: applybench -repo PATH [flags] | applybench -replay [flags] CASE.txtar [CASE.txtar]")
	}
	c.tools, c.sets, c.kinds = splitList(tools), splitList(sets), splitList(kinds)
	c.dump, c.ignored = splitList(dump), splitList(ignored)
	for _, k := range c.kinds {
		if k != kindNone && !slices.Contains(allKinds(), k) && !slices.Contains(extraKinds(), k) {
			return nil, fmt.Errorf("unknown damage kind %q", k)
		}
	}
	for _, s := range c.sets {
		if s != setReal && s != setDamaged {
			return nil, fmt.Errorf("unknown set %q (want real or damaged)", s)
		}
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "applybench:", err)
		}
		os.Exit(2)
	}
	if len(c.replay) > 0 {
		err = replay(ctx, c, c.replay, os.Stdout)
	} else {
		err = run(ctx, c, log)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "applybench:", err)
		os.Exit(1)
	}
}

const (
	setReal    = "real"
	setDamaged = "damaged"
)

// benchCase is one patch to apply with every tool.
type benchCase struct {
	Set     string    `json:"set"`
	Commit  string    `json:"commit"`
	Kind    string    `json:"kind,omitempty"`
	Files   int       `json:"files"`
	Results []*result `json:"results"`

	patch         []byte
	before, after map[string][]byte
}

func run(ctx context.Context, c *config, log *slog.Logger) error {
	r, err := openRepo(ctx, c.repo)
	if err != nil {
		return err
	}
	defer r.Close()
	if c.name == "" {
		c.name = repoName(r.gitDir)
	}

	work := c.work
	if work == "" {
		if work, err = os.MkdirTemp("", "applybench-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	if work, err = filepath.Abs(work); err != nil {
		return err
	}
	ws := &workspace{
		root:    filepath.Join(work, "ws", path.Base(c.name)),
		patch:   filepath.Join(work, "ws", "patch.diff"),
		ignored: c.ignored,
		timeout: c.timeout,
	}
	tools, err := newTools(c.tools, c.smith, filepath.Join(work, "home"), ws.root)
	if err != nil {
		return err
	}

	s, commits, err := loadSample(ctx, r, c, log)
	if err != nil {
		return err
	}
	var cases []*benchCase
	if slices.Contains(c.sets, setReal) {
		cases = append(cases, realCases(commits)...)
		s.Contents = contents(commits)
	}
	if slices.Contains(c.sets, setDamaged) {
		dc, skipped := damagedCases(commits, c, ws.root, log)
		s.DamageSkipped = skipped
		cases = append(cases, dc...)
	}

	start := time.Now()
	for i, bc := range cases {
		for _, t := range tools {
			res, err := ws.runRepeated(ctx, t, bc.patch, bc.before, bc.after, c.repeat)
			if err != nil {
				return fmt.Errorf("case %s %s: %w", bc.Set, bc.Commit, err)
			}
			if res.Unstable {
				log.Warn("outcome changed between repeats", "set", bc.Set, "commit", bc.Commit, "tool", t.name)
			}
			bc.Results = append(bc.Results, res)
		}
		if (i+1)%100 == 0 {
			log.Info("progress", "cases", i+1, "of", len(cases), "elapsed", time.Since(start).Round(time.Second))
		}
	}
	s.tally(cases, tools)
	s.Cases = cases

	if c.failures != "" {
		if err := writeFailures(c.failures, ws.root, cases, c.dump, tools); err != nil {
			return err
		}
	}
	if c.jsonOut != "" {
		if err := writeJSON(c.jsonOut, s); err != nil {
			return err
		}
	}
	return writeMarkdown(c.mdOut, s)
}

// repoName guesses a name from the git directory: the work tree's name, or
// the bare directory's without ".git".
func repoName(gitDir string) string {
	dir := filepath.Clean(gitDir)
	if filepath.Base(dir) == ".git" {
		dir = filepath.Dir(dir)
	}
	return strings.TrimSuffix(filepath.Base(dir), ".git")
}

// loadSample takes eligible commits from the shuffled history until it has
// c.n of them.
func loadSample(ctx context.Context, r *repo, c *config, log *slog.Logger) (*summary, []*commitDiff, error) {
	head, err := r.git(ctx, "rev-parse", "--verify", c.rev+"^{commit}")
	if err != nil {
		return nil, nil, err
	}
	ids, err := r.sampleCommits(ctx, c.rev, c.seed)
	if err != nil {
		return nil, nil, err
	}
	s := &summary{Repo: c.name, Rev: c.rev, Head: strings.TrimSpace(string(head)), Seed: c.seed,
		History: len(ids), Skipped: map[string]int{}}
	var commits []*commitDiff
	for _, id := range ids {
		if len(commits) == c.n {
			break
		}
		cd, err := r.load(ctx, id, c.lim)
		if ie := (*ineligibleError)(nil); errors.As(err, &ie) {
			s.Skipped[ie.reason]++
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		commits = append(commits, cd)
		s.noteDate(cd)
	}
	s.Commits = len(commits)
	log.Info("sample", "commits", len(commits), "history", len(ids), "skipped", s.Skipped)
	return s, commits, nil
}

// realCases makes one case per commit from its git diff as written.
func realCases(commits []*commitDiff) []*benchCase {
	var cases []*benchCase
	for _, cd := range commits {
		cases = append(cases, &benchCase{Set: setReal, Commit: cd.id, Files: len(cd.changes),
			patch: cd.diff, before: cd.before, after: cd.after})
	}
	return cases
}

// damagedCases derives one damaged case per commit. Each case gets the
// applicable kind used least so far, ties going to the earlier kind in
// c.kinds, so the kinds stay balanced although some need a multi-hunk file
// or a no-newline marker. The damage of the i-th commit draws from a
// generator seeded with (seed, i) alone.
func damagedCases(commits []*commitDiff, c *config, root string, log *slog.Logger) ([]*benchCase, map[string]int) {
	used := map[string]int{}
	skipped := map[string]int{}
	var cases []*benchCase
	for i, cd := range commits {
		src := &source{diff: cd.plainDiff, before: cd.before, after: cd.after, root: root}
		fds, err := parseDiff(src.diff)
		if err != nil {
			log.Warn("damaged set: skip commit", "commit", cd.id, "err", err)
			skipped["unparsable"]++
			continue
		}
		kind := ""
		for _, k := range c.kinds {
			if applicable(k, fds, src) && (kind == "" || used[k] < used[kind]) {
				kind = k
			}
		}
		if kind == "" {
			skipped["no-kind-applies"]++
			continue
		}
		d, err := damage(kind, src, rand.New(rand.NewPCG(c.seed, uint64(i))))
		if err != nil {
			log.Warn("damaged set: skip commit", "commit", cd.id, "kind", kind, "err", err)
			skipped["damage-failed"]++
			continue
		}
		used[kind]++
		cases = append(cases, &benchCase{Set: setDamaged, Commit: cd.id, Kind: kind, Files: len(cd.changes),
			patch: d.diff, before: d.before, after: d.after})
	}
	return cases, skipped
}

// contents counts what the real set exercises.
func contents(commits []*commitDiff) map[string]int {
	m := map[string]int{}
	for _, cd := range commits {
		for _, c := range cd.changes {
			m["files"]++
			switch c.status {
			case 'M':
				m["modified"]++
			case 'A':
				m["created"]++
			case 'D':
				m["deleted"]++
			case 'R':
				m["renamed"]++
			case 'C':
				m["copied"]++
			}
			if c.oldPath != "" && c.newPath != "" && c.oldMode != c.newMode {
				m["mode-changes"]++
			}
		}
		for _, line := range bytes.Split(cd.diff, []byte("\n")) {
			switch {
			case bytes.HasPrefix(line, []byte("@@ ")):
				m["hunks"]++
			case bytes.HasPrefix(line, []byte("\\ ")):
				m["no-newline-markers"]++
			}
		}
	}
	return m
}
