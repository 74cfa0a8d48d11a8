package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/config"
	"github.com/smith-dev/smith/daemon"
	"github.com/smith-dev/smith/diffapply"
	"github.com/smith-dev/smith/protocol"
)

type applyOpts struct {
	directory string
	check     bool
	preview   bool
	strip     int
	stripSet  bool // --strip was given (-1 is also its "detect" default)
	reverse   bool
	include   []string
	exclude   []string
	hunks     string
	strict    bool
	json      bool
	recover   bool
	target    string
}

func newApplyCmd(s *IOStreams) *cobra.Command {
	o := &applyOpts{}
	cmd := &cobra.Command{
		Use:   "apply [PATCH|-]",
		Short: "Apply a unified diff to the working tree, tolerant but never silently wrong",
		Long: `Apply a unified diff (from a file, or standard input with - or no argument) to the
files under the current directory. Sloppy diffs are repaired (wrong @@ counts, hunks
without line numbers, Markdown fences, a/ b/ or missing prefixes, AgentSmithy's difflib
output); each hunk is located by a ladder — exact, offset, whitespace-insensitive,
fuzz — and reported with the level used. A hunk that fits in more than one place, or
nowhere, is a conflict: then nothing is written and the exit status is 1. All files
are written atomically, with a journal that a killed run leaves for --recover.`,
		Example: `  smith apply fix.patch
  smith apply --preview fix.patch
  git diff | smith apply --check -
  smith apply --hunks 1,3 --strict fix.patch
  smith apply --reverse fix.patch        # undo it
  smith apply --json --check fix.patch`,
		Args: argsUpTo(0, 1, "at most one PATCH", "a unified diff file, or - for standard input; quote a path with spaces"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stripSet = cmd.Flags().Changed("strip")
			return runApply(cmd.Context(), s, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.directory, "directory", "C", "", "workspace root (default: the current directory)")
	f.BoolVar(&o.check, "check", false, "only check that the diff applies; write nothing")
	f.BoolVar(&o.preview, "preview", false, "show each hunk where it would go, with its match level; write nothing")
	f.IntVarP(&o.strip, "strip", "p", -1, "remove N leading path components (default: detect)")
	f.Lookup("strip").DefValue = "0" // -1 means "detect"; keep pflag from printing it
	f.BoolVarP(&o.reverse, "reverse", "R", false, "apply the diff backwards")
	f.StringSliceVar(&o.include, "include", nil, "only files matching these globs (path.Match, or a directory prefix)")
	f.StringSliceVar(&o.exclude, "exclude", nil, "skip files matching these globs")
	f.StringVar(&o.hunks, "hunks", "", "apply only these hunks, by id across the diff: 1,3,5-7")
	f.BoolVar(&o.strict, "strict", false, "accept byte-exact matches only (no whitespace or fuzz)")
	f.BoolVar(&o.json, "json", false, "print the plan or result as JSON (see docs/cli.md)")
	f.BoolVar(&o.recover, "recover", false, "finish (or roll back) an apply that was interrupted, then exit")
	f.StringVar(&o.target, "target", "", "apply a one-file diff to this path, whatever its headers say")
	return cmd
}

// runApply runs smith apply. With --json, input it cannot use (a PATCH
// that is missing, a directory or unreadable, bad flags, a --directory that
// is not there) is said by the same JSON object as a diff it cannot parse
// ("result": "error", docs/cli.md), not by a stderr line a script reading
// stdout would miss; the exit status stays ExitUsage.
func runApply(ctx context.Context, s *IOStreams, o *applyOpts, args []string) error {
	err := applyPatch(ctx, s, o, args)
	var ee *ExitError
	if !o.json || !errors.As(err, &ee) || ee.Code != ExitUsage || ee.Silent {
		return err
	}
	root := o.directory
	if root == "" {
		root = "."
	}
	if abs, aerr := filepath.Abs(root); aerr == nil {
		root = abs
	}
	if werr := writeApplyJSON(s.Out, &applyResult{Result: "error", Root: root, Error: err.Error(), Files: []applyFile{}}); werr != nil {
		return err
	}
	return &ExitError{Code: ExitUsage, Err: err, Silent: true}
}

// applyPatch is runApply but for how a usage error is said with --json.
func applyPatch(ctx context.Context, s *IOStreams, o *applyOpts, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	s, flush := s.buffered()
	defer flush()
	root := o.directory
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return usageErrorf("cannot tell the current directory: %v", err)
		}
		root = wd
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return usageErrorf("bad --directory: %v", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return usageErrorf("--directory %s: %v; give the directory the diff's paths start from", root, pathErrText(err))
	} else if !fi.IsDir() {
		return usageErrorf("--directory %s: not a directory; give the directory the diff's paths start from", root)
	}
	journal, jerr := applyJournalDir(s, root)
	if o.recover {
		if len(args) > 0 {
			return usageErrorf("--recover takes no PATCH: it finishes (or rolls back) an apply that was interrupted in %s; run smith apply %s again afterwards", root, args[0])
		}
		if jerr != nil {
			return usageErrorf("%v", jerr)
		}
		n, err := diffapply.Recover(root, journal)
		if err != nil {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("recover: %w", err)}
		}
		recoverEngine(ctx, s, root)
		fmt.Fprintf(s.Err, "recovered %d interrupted apply(s) in %s\n", n, root)
		return nil
	}
	ids, err := parseHunkIDs(o.hunks)
	if err != nil {
		return usageErrorf("--hunks: %v", err)
	}
	if o.strip < 0 && o.stripSet {
		return usageErrorf("--strip %d: give the number of leading path components to remove, 0 or more (leave it out to detect them)", o.strip)
	}
	if err := checkGlobs(o.include, o.exclude); err != nil {
		return err
	}
	pt, err := openPatch(s, args)
	if err != nil {
		return err
	}
	defer pt.close()
	if n := pt.len(); n >= lazyGCFrom && n < lazyGCBelow && s.Getenv("GOGC") == "" {
		// A short-lived process on a mid-sized diff: collecting at nine
		// times the live heap, not twice, takes 15-20 % off its CPU (1 MB
		// diff, docs/benchmarks.md; at five times it still collected
		// once there) for some 20 MB more peak memory. A large diff
		// keeps the default (its memory is the bound that matters), and
		// so does a small one: it never collects, and setting the GC's
		// target costs more than that saves.
		defer debug.SetGCPercent(debug.SetGCPercent(lazyGCPercent))
	}
	name := pt.name
	writes := !o.check && !o.preview
	if writes {
		// The same run's fresh memory in huge pages, where the system
		// gives them on request: its page faults were a fifth of its CPU.
		// A plan that writes nothing reuses one file's memory for the next
		// (File.Release) and gained nothing measurable.
		hugeHeap(pt.len(), s.Getenv)
	}
	if writes && jerr == nil {
		// A run killed mid-commit left a journal: finish it first. What
		// cannot be settled is reported here once (the journal is set
		// aside), and does not keep this apply from running: it plans
		// against the files as they are.
		if n, err := diffapply.Recover(root, journal); err != nil {
			fmt.Fprintf(s.Err, "warning: an earlier interrupted apply could not be settled completely: %v\n", err)
		} else if n > 0 {
			fmt.Fprintf(s.Err, "finished %d interrupted apply(s) first\n", n)
		}
	}
	strip := o.strip
	switch {
	case strip == 0:
		strip = diffapply.StripNone
	case strip < 0:
		strip = 0
	}
	opts := diffapply.Options{
		Strip: strip, Strict: o.strict, Reverse: o.reverse, Target: o.target,
		Select: pathFilter(o.include, o.exclude),
	}
	if jerr == nil {
		// smith's state folder (base/smith, which holds the journal) is
		// never written, even when it lies inside the workspace.
		opts.Protect = []string{filepath.Dir(filepath.Dir(journal))}
	}
	// The report and the engine need no file's contents once it is
	// planned: the plan streams, file by file (--json and --preview print
	// the contents).
	var p *diffapply.Patch
	var sa *streamedApply
	var lim *memLimit
	if n := pt.len(); writes && !o.json && !o.preview && n >= softLimitFrom && s.Getenv("GOMEMLIMIT") == "" {
		// Collected at the limit only (unless GOGC is set), not each
		// time the heap doubles: what a large apply holds is small beside
		// the limit most of the time, and the default collected several
		// times as often, each time scanning the report's hunks (55 MB
		// diff: 1.4x the CPU of collecting at the limit).
		lim = newMemLimit(n, s.Getenv("GOGC") == "")
		defer lim.lift()
	}
	if o.json || o.preview {
		var diff []byte
		if diff, err = pt.bytes(); err != nil {
			return err
		}
		p, err = diffapply.Plan(root, diff, opts)
	} else if sa, err = planStreamed(root, pt, opts, ids, diffsToKeep(writes, pt.len()), lim); err == nil {
		p = sa.patch
		defer sa.close()
	}
	if err == nil && len(p.Files) == 0 {
		err = errors.New("no file left to patch (check --include/--exclude)")
	}
	if err != nil {
		// An unsafe path is a refusal like a conflict; anything else means
		// the input could not be used.
		code, result := ExitUsage, "error"
		if errors.Is(err, diffapply.ErrUnsafePath) {
			code, result = ExitFailure, "refused"
		}
		err = fmt.Errorf("%s: %w; nothing was written", name, err)
		if o.json {
			writeApplyJSON(s.Out, &applyResult{Result: result, Root: root, Error: err.Error(), Files: []applyFile{}})
			return &ExitError{Code: code, Err: err, Silent: true}
		}
		return &ExitError{Code: code, Err: err}
	}
	if ids != nil {
		if err := checkIDs(p, ids); err != nil {
			return usageErrorf("--hunks: %v", err)
		}
	}
	var planErr error
	if sa != nil {
		planErr = sa.writesErr
	} else {
		_, planErr = p.Writes(ids)
	}
	res := &applyResult{Result: "checked", Root: p.Root, Repairs: p.Repairs, patch: p, ids: ids, stream: sa}
	switch {
	case planErr != nil:
		res.Result = "conflict"
		res.Error = planErr.Error()
	case o.preview:
		res.Result = "preview"
	case writes:
		diffOf := func(f *diffapply.File) asAppliedDiff {
			if f.Op == diffapply.OpCopy {
				var content []byte
				if ws, _, err := f.Writes(ids); err == nil && len(ws) == 1 {
					content = ws[0].Content
				}
				d, ok := copyDiff(root, f.Path, content)
				return asAppliedDiff{size: int64(len(d)), unfaithful: !ok, text: func() (string, *diffapply.File, error) { return d, nil, nil }}
			}
			d, plan, ok := f.AppliedPlan(ids, true)
			return asAppliedDiff{size: int64(len(d)), unfaithful: !ok, text: func() (string, *diffapply.File, error) { return d, plan, nil }}
		}
		if sa != nil {
			diffOf = sa.asApplied
		}
		journalled, err := applyJournalled(ctx, s, root, p, ids, diffOf, lim)
		if !journalled && err == nil {
			lim.lift() // planned again whole, it holds what the limit did not count
			if sa != nil {
				err = sa.apply(ctx, root, pt, opts, ids, journalOrEmpty(journal, jerr))
			} else {
				err = p.Apply(ctx, ids, journalOrEmpty(journal, jerr))
			}
		}
		if err != nil {
			res.Result = "failed"
			res.Error = err.Error()
			res.err = err
			planErr = err
		} else {
			res.Result = "applied"
			res.undo = journalled
		}
	}
	switch {
	case o.json:
		if err := writeApplyJSON(s.Out, res); err != nil {
			return err
		}
	case o.preview:
		writePreview(s, p, ids)
	default:
		writeReport(s, res)
	}
	if planErr != nil {
		return &ExitError{Code: ExitFailure, Err: planErr, Silent: true}
	}
	return nil
}

// diffsToKeep is what a streamed plan keeps of each file's as-applied
// diff: the engine records it when the patch is written, and from
// spoolDiffsFrom they wait in a temporary file.
func diffsToKeep(writes bool, size int64) keepDiffs {
	switch {
	case !writes:
		return noDiffs
	case size >= spoolDiffsFrom:
		return diffsSpooled
	}
	return diffsInMemory
}

// Between these diff sizes smith apply lets its heap grow further
// between collections (runApply).
const (
	lazyGCFrom    = 256 << 10
	lazyGCBelow   = 4 << 20
	lazyGCPercent = 800
)

// From this diff size smith apply that writes, streaming its plan, runs
// with a soft memory limit (memLimit).
const softLimitFrom = 16 << 20

// memLimit is the soft memory limit of a large smith apply that writes,
// under which its GC runs only when the heap reaches it (runApply). What
// such an apply holds at once is one file's plan while it plans, then
// every file's text after until the commit, with one file's plan and
// as-applied diff at a time (docs/benchmarks.md: 2.2 times the diff at
// the most on the 55 MB benchmark). The limit is two and a half times the
// diff, and never below twice the texts after nor three times the largest
// file before and after (raised as the plan meets them), so that a small
// diff of very large files, which must hold more, is not collected
// without end.
type memLimit struct {
	diff  int64 // the diff's size
	after int64 // the texts after of the files planned so far for the engine
	file  int64 // the largest file planned so far, before and after
	set   int64 // the limit in force
	// The process's settings before, put back by lift; gc is -2 when the
	// GC percent was left alone.
	limit0, gc0 int64
	lifted      bool
}

// newMemLimit sets the limit for a diff of size bytes; gcOff collects at
// the limit only.
func newMemLimit(size int64, gcOff bool) *memLimit {
	l := &memLimit{diff: size, gc0: -2}
	l.set = l.value()
	l.limit0 = debug.SetMemoryLimit(l.set)
	if gcOff {
		l.gc0 = int64(debug.SetGCPercent(-1))
	}
	return l
}

// lift puts the process's settings back: at the end, or when the apply
// must hold what the limit does not count (every diff at once for a smith
// serve, a whole plan to write without the engine). Once is enough.
func (l *memLimit) lift() {
	if l == nil || l.lifted {
		return
	}
	l.lifted = true
	debug.SetMemoryLimit(l.limit0)
	if l.gc0 != -2 {
		debug.SetGCPercent(int(l.gc0))
	}
}

func (l *memLimit) value() int64 { return max(l.diff*5/2, 2*l.after, 3*l.file) }

// grow accounts for a planned file (kept: its text after goes to the
// engine) and raises the limit when it must.
func (l *memLimit) grow(f *diffapply.File, kept bool) {
	if l == nil || l.lifted {
		return
	}
	if kept {
		l.after += int64(len(f.After))
	}
	l.file = max(l.file, int64(len(f.Before)+len(f.After)))
	if v := l.value(); v > l.set {
		l.set = v
		debug.SetMemoryLimit(v)
	}
}

// applyJournalled applies the planned files through the workspace's engine
// (the one a smith serve holds, or one opened here), as one group of
// changes, so that smith undo takes the patch back and smith changes lists
// it. It reports false, writing nothing, when the engine cannot be
// opened: the patch is then written directly, as before, and not
// journalled for smith undo (a warning says why).
//
// diffOf gives a file's as-applied diff of the chosen hunks (asAppliedDiff):
// its text and plan are read when the engine records the file's change
// (an engine in this process takes them one at a time: ApplyPlannedSeq).
// A diff that cannot stand for its change (unfaithful) makes it report
// false: the patch is written directly.
//
// lim (nil: none) is lifted when the diffs must all be read at once.
func applyJournalled(ctx context.Context, s *IOStreams, root string, p *diffapply.Patch, ids []int, diffOf func(*diffapply.File) asAppliedDiff, lim *memLimit) (bool, error) {
	ws, err := config.FindWorkspace(root)
	if err != nil {
		return false, nil
	}
	var chs []protocol.Change
	var texts []func() (string, *diffapply.File, error) // each change's diff and plan
	for _, f := range p.Files {
		if !selectsFile(f, ids) {
			continue
		}
		rel, err := filepath.Rel(ws, filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			return false, nil
		}
		ch := protocol.Change{Path: filepath.ToSlash(rel), Kind: protocol.ChangeModify}
		d := diffOf(f)
		if d.unfaithful {
			fmt.Fprintf(s.Err, "smith undo will not cover this apply: no unified diff of %s gives the text this patch makes (it has carriage returns a diff line cannot carry), so it cannot be recorded as a change; use smith apply -R to take it back\n", f.Path)
			return false, nil
		}
		size, text := d.size, d.text
		if f.SetsMode() && f.Op != diffapply.OpDelete {
			ch.Mode = f.Mode // the engine sets it, and its undo the mode before
		}
		if f.Op == diffapply.OpCopy {
			// The creation of its target, with the source's mode unless
			// the patch gives one (as a direct write gives it).
			ch.Kind, ch.Mode = protocol.ChangeCreate, copyMode(root, f)
		}
		if size == 0 && (f.Op == diffapply.OpCreate || f.Op == diffapply.OpCopy) {
			// An empty file created (git's "new file mode" without
			// hunks, a copy of an empty file): a change of empty
			// content, as no diff can say it.
			ch.HasContent = true
			text = noDiffText
		}
		if size == 0 && f.Op == diffapply.OpModify {
			if ch.Mode == 0 {
				continue // its hunks change nothing: nothing to write or undo
			}
			// A mode change alone: a change without a diff.
			text = noDiffText
		}
		switch f.Op {
		case diffapply.OpCreate:
			ch.Kind = protocol.ChangeCreate
		case diffapply.OpDelete:
			ch.Kind = protocol.ChangeDelete
		case diffapply.OpRename:
			old, err := filepath.Rel(ws, filepath.Join(root, filepath.FromSlash(f.OldPath)))
			if err != nil {
				return false, nil
			}
			ch.Kind, ch.OldPath = protocol.ChangeRename, filepath.ToSlash(old)
		}
		chs, texts = append(chs, ch), append(texts, text)
	}
	if len(chs) == 0 {
		return false, nil
	}
	b, err := openWorkspaceEngine(ctx, s, ws)
	if err != nil {
		fmt.Fprintf(s.Err, "smith undo will not cover this apply (%v); use smith apply -R to take it back\n", err)
		return false, nil
	}
	defer b.Close()
	if q, ok := b.(patchSeqApplier); ok {
		_, err = q.ApplyPlannedSeq(ctx, "", func(yield func(daemon.PlannedChange, error) bool) {
			for i, ch := range chs {
				pc := daemon.PlannedChange{Change: ch}
				var err error
				pc.Diff, pc.Plan, err = texts[i]()
				texts[i] = nil
				if !yield(pc, err) || err != nil {
					return
				}
			}
		})
		return true, err
	}
	// A smith serve records them: every diff is sent at once (the plans
	// stay here).
	lim.lift()
	for i := range chs {
		if chs[i].Diff, _, err = texts[i](); err != nil {
			return true, err
		}
	}
	_, err = b.ApplyPatch(ctx, "", chs)
	return true, err
}

// noDiffText is the text and plan of a change that no diff can say: an
// empty file created, a mode change alone.
func noDiffText() (string, *diffapply.File, error) { return "", nil, nil }

// asAppliedDiff is a file's as-applied diff as smith apply hands it to the
// engine: its size, and its text and plan (nil: none;
// daemon.PlannedChange), read when the engine records the file's change.
type asAppliedDiff struct {
	size int64
	text func() (string, *diffapply.File, error)
	// unfaithful: the diff, planned against the text before, does not give
	// what smith apply planned (File.AppliedPlan's ok), so it cannot stand
	// for the change: the patch is written without the engine.
	unfaithful bool
}

// patchSeqApplier is an engine in this process (*daemon.Engine): the
// report is smith apply's own, so the engine need not present the
// changes it applied (plan each again) to return them; it takes them
// one at a time, so that a large patch's diffs are not all held at once,
// and with the plans smith apply made of them, so that it need not plan
// them again.
type patchSeqApplier interface {
	ApplyPlannedSeq(ctx context.Context, dialogID string, chs iter.Seq2[daemon.PlannedChange, error]) ([]string, error)
}

// The engine in this process takes the short way (a rename of the method
// must not silently lose it).
var _ patchSeqApplier = (*localBackend)(nil)

// openWorkspaceEngine opens the engine of workspace ws with its settings:
// the one a smith serve holds, or one in this process. Opening it settles
// what a killed write left in its journal.
func openWorkspaceEngine(ctx context.Context, s *IOStreams, ws string) (backend, error) {
	set, err := config.Load(config.Options{Workspace: ws, Getenv: s.Getenv})
	if err != nil {
		return nil, fmt.Errorf("the workspace's settings cannot be read: %w", err)
	}
	b, err := openBackend(ctx, s, set)
	if err != nil {
		return nil, fmt.Errorf("the workspace's state cannot be opened: %w", err)
	}
	return b, nil
}

// recoverEngine settles what a killed apply left in the journal of the
// workspace's engine (smith apply writes through it): opening the engine
// finishes or rolls back its interrupted transaction, settles the
// changes' status and removes its temp files. When a smith serve holds
// the engine, that engine did so when it started; nothing is left to do.
func recoverEngine(ctx context.Context, s *IOStreams, root string) {
	ws, err := config.FindWorkspace(root)
	if err != nil {
		return
	}
	b, err := openWorkspaceEngine(ctx, s, ws)
	if err != nil {
		fmt.Fprintf(s.Err, "warning: the workspace's engine journal was not checked: %v\n", err)
		return
	}
	b.Close()
}

// selectsFile reports whether ids (nil: all) choose a hunk of f, or f has
// no hunks (a rename, an empty file created or deleted).
func selectsFile(f *diffapply.File, ids []int) bool {
	if ids == nil || len(f.Hunks) == 0 {
		return true
	}
	for _, h := range f.Hunks {
		if slices.Contains(ids, h.ID) {
			return true
		}
	}
	return false
}

func journalOrEmpty(dir string, err error) string {
	if err != nil {
		return ""
	}
	return dir
}

// applyJournalDir is where smith apply keeps the journal for root: under
// the user's state directory, never inside the workspace.
func applyJournalDir(s *IOStreams, root string) (string, error) {
	base := s.Getenv("XDG_STATE_HOME")
	if base == "" {
		home := s.Getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no state directory: set XDG_STATE_HOME or HOME")
			}
			home = h
		}
		base = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, "smith", "apply", hex.EncodeToString(sum[:8])), nil
}

func readPatch(s *IOStreams, args []string) ([]byte, string, error) {
	if len(args) == 0 || args[0] == "-" {
		if len(args) == 0 && s.InTTY {
			return nil, "", usageErrorf("no patch given: pass a file, or pipe one into 'smith apply -'")
		}
		b, err := io.ReadAll(s.In)
		if err != nil {
			return nil, "", usageErrorf("reading standard input: %v", err)
		}
		return b, "<stdin>", nil
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return nil, "", cannotReadPatch(args[0], err)
	}
	return b, args[0], nil
}

// cannotReadPatch is the usage error of a PATCH argument that cannot be
// read: the file named as the user gave it, and what to give instead.
func cannotReadPatch(name string, err error) error {
	return usageErrorf("cannot read the patch %s: %v; give a unified diff file, or - (or a pipe) for standard input", name, pathErrText(err))
}

// checkGlobs refuses a malformed --include or --exclude pattern, which
// path.Match would otherwise never match, silently.
func checkGlobs(include, exclude []string) error {
	for flag, pats := range map[string][]string{"--include": include, "--exclude": exclude} {
		for _, pat := range pats {
			if _, err := path.Match(strings.TrimSuffix(pat, "/"), ""); err != nil {
				return usageErrorf("%s %q: %v; see path.Match for the syntax (*, ?, [a-z], \\ to quote)", flag, pat, err)
			}
		}
	}
	return nil
}

// parseHunkIDs reads "1,3,5-7"; "" means all (nil).
func parseHunkIDs(spec string) ([]int, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	ids := []int{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 1 {
			return nil, fmt.Errorf("%q is not a hunk id (ids start at 1)", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range", part)
			}
		}
		for i := a; i <= b; i++ {
			ids = append(ids, i)
		}
	}
	return ids, nil
}

func checkIDs(p *diffapply.Patch, ids []int) error {
	n := 0
	for _, f := range p.Files {
		n += len(f.Hunks)
	}
	for _, id := range ids {
		if id > n {
			return fmt.Errorf("hunk %d does not exist (the diff has %d)", id, n)
		}
	}
	return nil
}

// pathFilter builds Options.Select from --include and --exclude.
func pathFilter(include, exclude []string) func(string) bool {
	if len(include) == 0 && len(exclude) == 0 {
		return nil
	}
	match := func(pats []string, p string) bool {
		for _, pat := range pats {
			pat = strings.TrimSuffix(pat, "/")
			if ok, _ := path.Match(pat, p); ok {
				return true
			}
			if ok, _ := path.Match(pat, path.Base(p)); ok && !strings.Contains(pat, "/") {
				return true
			}
			if strings.HasPrefix(p, pat+"/") {
				return true
			}
		}
		return false
	}
	return func(p string) bool {
		if len(include) > 0 && !match(include, p) {
			return false
		}
		return !match(exclude, p)
	}
}
