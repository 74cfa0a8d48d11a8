package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// repo reads commits, diffs and blobs from a local git repository. Every git
// process runs with the user's and the system's configuration switched off,
// so that the diffs (prefixes, rename detection, colours) do not depend on
// the machine the benchmark runs on.
//
// A repo is not safe for concurrent use: blob reads share one long-lived
// `git cat-file --batch` process. Close stops it.
type repo struct {
	gitDir string

	mu     sync.Mutex
	batch  *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

// gitEnv is the environment of every git process the benchmark starts,
// including `git apply` as a tool under test.
func gitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	)
}

// openRepo resolves path (a work tree or a bare repository) to its git
// directory and starts the blob reader.
func openRepo(ctx context.Context, path string) (*repo, error) {
	out, err := gitOutput(ctx, "", "-C", path, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	r := &repo{gitDir: strings.TrimSpace(string(out))}
	r.batch = exec.Command("git", "--git-dir="+r.gitDir, "cat-file", "--batch")
	r.batch.Env = gitEnv()
	if r.stdin, err = r.batch.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := r.batch.StdoutPipe()
	if err != nil {
		return nil, err
	}
	r.stdout = bufio.NewReaderSize(stdout, 1<<16)
	if err := r.batch.Start(); err != nil {
		return nil, fmt.Errorf("start git cat-file: %w", err)
	}
	return r, nil
}

// Close stops the blob reader and waits for it.
func (r *repo) Close() error {
	r.stdin.Close()
	return r.batch.Wait()
}

// gitOutput runs git with the isolated environment and returns its stdout;
// stderr goes into the error.
func gitOutput(ctx context.Context, gitDir string, args ...string) ([]byte, error) {
	if gitDir != "" {
		args = append([]string{"--git-dir=" + gitDir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = gitEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

func (r *repo) git(ctx context.Context, args ...string) ([]byte, error) {
	return gitOutput(ctx, r.gitDir, args...)
}

// blob returns the content of the object named by a full hex id.
func (r *repo) blob(id string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := fmt.Fprintln(r.stdin, id); err != nil {
		return nil, fmt.Errorf("read blob %s: %w", id, err)
	}
	header, err := r.stdout.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", id, err)
	}
	fields := strings.Fields(header)
	if len(fields) != 3 || fields[1] != "blob" {
		return nil, fmt.Errorf("read blob %s: unexpected answer %q", id, strings.TrimSpace(header))
	}
	size, err := strconv.Atoi(fields[2])
	if err != nil {
		return nil, fmt.Errorf("read blob %s: bad size in %q", id, strings.TrimSpace(header))
	}
	data := make([]byte, size+1) // content and the terminating LF
	if _, err := io.ReadFull(r.stdout, data); err != nil {
		return nil, fmt.Errorf("read blob %s: %w", id, err)
	}
	return data[:size], nil
}

// sampleCommits lists the non-merge, non-root commits reachable from rev in
// git's default order and shuffles them with seed. The caller takes eligible
// commits from the front until it has enough, so a given (repository, rev,
// seed) always yields the same sample.
func (r *repo) sampleCommits(ctx context.Context, rev string, seed uint64) ([]string, error) {
	out, err := r.git(ctx, "rev-list", "--min-parents=1", "--max-parents=1", rev, "--")
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(string(out))
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids, nil
}

// change is one entry of `git diff --raw`.
type change struct {
	status           byte // M, A, D, R, C (T and U make a commit ineligible)
	oldMode, newMode string
	oldID, newID     string
	oldPath, newPath string // oldPath is empty for A, newPath for D
}

// commitDiff is what the benchmark needs of one commit: its parent, the
// touched files on both sides and the text of `git diff` between them.
type commitDiff struct {
	id, parent string
	date       string // committer date, YYYY-MM-DD
	changes    []change
	diff       []byte // git diff -M (renames detected), the real-history input
	plainDiff  []byte // git diff --no-renames, the base of the damaged set
	before     map[string][]byte
	after      map[string][]byte
}

// limits bound which commits are eligible, to keep the run short.
type limits struct {
	maxFiles     int
	maxDiffBytes int
}

// ineligibleError marks a commit the benchmark skips: binary, symlink or
// submodule changes, paths git would quote, or a diff beyond the limits.
type ineligibleError struct {
	reason string // a short key for the report: binary, too-many-files, ...
	detail string
}

func (e *ineligibleError) Error() string {
	return fmt.Sprintf("commit not eligible: %s (%s)", e.reason, e.detail)
}

func ineligible(reason, format string, args ...any) error {
	return &ineligibleError{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// diffArgs returns a git diff command line with the options every diff of
// the benchmark uses: three lines of context, standard prefixes, no colour,
// no external or textconv drivers.
func diffArgs(extra ...string) []string {
	return append([]string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "-U3",
		"--src-prefix=a/", "--dst-prefix=b/"}, extra...)
}

// load reads everything about commit id, or returns an *ineligibleError
// when the commit is not a text-only change within lim.
func (r *repo) load(ctx context.Context, id string, lim limits) (*commitDiff, error) {
	out, err := r.git(ctx, "log", "-1", "--format=%P%x00%cs", id)
	if err != nil {
		return nil, err
	}
	parent, date, _ := strings.Cut(strings.TrimSpace(string(out)), "\x00")
	cd := &commitDiff{id: id, parent: parent, date: date}

	raw, err := r.git(ctx, "diff", "--raw", "-z", "-M", "--no-abbrev", parent, id)
	if err != nil {
		return nil, err
	}
	if cd.changes, err = parseRaw(raw); err != nil {
		return nil, err
	}
	if len(cd.changes) == 0 || len(cd.changes) > lim.maxFiles {
		return nil, ineligible("file-count", "%d files", len(cd.changes))
	}
	for _, c := range cd.changes {
		if err := checkChange(c); err != nil {
			return nil, err
		}
	}
	if cd.diff, err = r.git(ctx, diffArgs("-M", parent, id)...); err != nil {
		return nil, err
	}
	if len(cd.diff) > lim.maxDiffBytes {
		return nil, ineligible("diff-size", "%d bytes", len(cd.diff))
	}
	if isBinaryDiff(cd.diff) {
		return nil, ineligible("binary", "git wrote a binary patch")
	}
	if cd.plainDiff, err = r.git(ctx, diffArgs("--no-renames", parent, id)...); err != nil {
		return nil, err
	}
	return cd, r.loadFiles(cd)
}

// loadFiles fills the before and after images of every touched path.
func (r *repo) loadFiles(cd *commitDiff) error {
	cd.before, cd.after = map[string][]byte{}, map[string][]byte{}
	for _, c := range cd.changes {
		if c.oldPath != "" {
			b, err := r.blob(c.oldID)
			if err != nil {
				return err
			}
			cd.before[c.oldPath] = b
		}
		if c.newPath != "" {
			b, err := r.blob(c.newID)
			if err != nil {
				return err
			}
			cd.after[c.newPath] = b
		}
	}
	for _, files := range []map[string][]byte{cd.before, cd.after} {
		for p, b := range files {
			if bytes.IndexByte(b, 0) >= 0 {
				return ineligible("binary", "%s contains NUL", p)
			}
		}
	}
	return nil
}

// parseRaw reads `git diff --raw -z` output.
func parseRaw(raw []byte) ([]change, error) {
	fields := strings.Split(string(raw), "\x00")
	var changes []change
	for i := 0; i < len(fields); i++ {
		meta := fields[i]
		if meta == "" {
			continue
		}
		m := strings.Fields(strings.TrimPrefix(meta, ":"))
		if len(m) != 5 || i+1 >= len(fields) {
			return nil, fmt.Errorf("unexpected raw diff entry %q", meta)
		}
		c := change{oldMode: m[0], newMode: m[1], oldID: m[2], newID: m[3], status: m[4][0]}
		i++
		p := fields[i]
		switch c.status {
		case 'A':
			c.newPath = p
		case 'D':
			c.oldPath = p
		case 'R', 'C':
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("raw diff entry %q lacks its second path", meta)
			}
			i++
			c.oldPath, c.newPath = p, fields[i]
		default:
			c.oldPath, c.newPath = p, p
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// checkChange refuses what a text patch cannot carry or what the byte
// comparison would not see: type changes, symlinks, submodules, and paths git
// would quote.
func checkChange(c change) error {
	if c.status != 'M' && c.status != 'A' && c.status != 'D' && c.status != 'R' && c.status != 'C' {
		return ineligible("type-change", "status %c", c.status)
	}
	for _, mode := range []string{c.oldMode, c.newMode} {
		if mode == "120000" || mode == "160000" {
			return ineligible("symlink-or-submodule", "mode %s", mode)
		}
	}
	for _, p := range []string{c.oldPath, c.newPath} {
		for i := 0; i < len(p); i++ {
			if b := p[i]; b <= ' ' || b >= 0x7f || b == '"' || b == '\\' {
				return ineligible("unusual-path", "%q", p)
			}
		}
	}
	return nil
}

// isBinaryDiff reports whether git wrote a binary section.
func isBinaryDiff(d []byte) bool {
	return bytes.Contains(d, []byte("\nGIT binary patch\n")) ||
		bytes.HasPrefix(d, []byte("Binary files ")) || bytes.Contains(d, []byte("\nBinary files "))
}
