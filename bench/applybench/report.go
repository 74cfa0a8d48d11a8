package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/txtar"
)

// summary is the JSON report: the sample, the tallies and every case.
type summary struct {
	Repo          string         `json:"repo"`
	Rev           string         `json:"rev"`
	Head          string         `json:"head"`
	Seed          uint64         `json:"seed"`
	History       int            `json:"history"` // non-merge, non-root commits reachable from rev
	Commits       int            `json:"commits"` // commits in the sample
	Oldest        string         `json:"oldest"`  // committer dates of the sample
	Newest        string         `json:"newest"`
	Contents      map[string]int `json:"contents,omitempty"`       // what the real set's diffs hold
	Skipped       map[string]int `json:"skipped"`                  // ineligible commits by reason
	DamageSkipped map[string]int `json:"damage_skipped,omitempty"` // sample commits left out of the damaged set
	Tools         []string       `json:"tools"`
	Sets          []*setTally    `json:"sets"`
	Cases         []*benchCase   `json:"cases"`
}

// setTally counts the outcomes of one set (or one damage kind) per tool.
type setTally struct {
	Set   string       `json:"set"`
	Kind  string       `json:"kind,omitempty"`
	Cases int          `json:"cases"`
	Tools []*toolTally `json:"tools"`
}

type toolTally struct {
	Tool          string  `json:"tool"`
	Exact         int     `json:"exact"`
	SilentWrong   int     `json:"silent_wrong"`
	Refused       int     `json:"refused"`
	FailedChanged int     `json:"failed_changed"`
	MsMedian      float64 `json:"ms_median"`
	MsMean        float64 `json:"ms_mean"`

	ms []float64
}

func (s *summary) noteDate(cd *commitDiff) {
	if s.Oldest == "" || cd.date < s.Oldest {
		s.Oldest = cd.date
	}
	if cd.date > s.Newest {
		s.Newest = cd.date
	}
}

// tally fills s.Sets: one entry per set, then one per damage kind.
func (s *summary) tally(cases []*benchCase, tools []tool) {
	for _, t := range tools {
		s.Tools = append(s.Tools, t.name)
	}
	index := map[[2]string]*setTally{}
	get := func(set, kind string) *setTally {
		key := [2]string{set, kind}
		if st := index[key]; st != nil {
			return st
		}
		st := &setTally{Set: set, Kind: kind}
		for _, t := range tools {
			st.Tools = append(st.Tools, &toolTally{Tool: t.name})
		}
		index[key] = st
		s.Sets = append(s.Sets, st)
		return st
	}
	for _, set := range []string{setReal, setDamaged} {
		for _, bc := range cases {
			if bc.Set != set {
				continue
			}
			sts := []*setTally{get(set, "")}
			if bc.Kind != "" {
				sts = append(sts, get(set, bc.Kind))
			}
			for _, st := range sts {
				st.Cases++
				for i, res := range bc.Results {
					st.Tools[i].add(res)
				}
			}
		}
	}
	for _, st := range s.Sets {
		for _, tt := range st.Tools {
			tt.finish()
		}
	}
	// Sets first, then kinds in the cycle's order.
	order := func(st *setTally) int {
		if st.Kind == "" {
			return slices.Index([]string{setReal, setDamaged}, st.Set) - 100
		}
		return slices.Index(append(allKinds(), extraKinds()...), st.Kind)
	}
	sort.SliceStable(s.Sets, func(i, j int) bool { return order(s.Sets[i]) < order(s.Sets[j]) })
}

func (tt *toolTally) add(r *result) {
	switch r.Outcome {
	case outcomeExact:
		tt.Exact++
	case outcomeSilentWrong:
		tt.SilentWrong++
	case outcomeRefused:
		tt.Refused++
	case outcomeFailedChanged:
		tt.FailedChanged++
	}
	tt.ms = append(tt.ms, r.Ms)
}

func (tt *toolTally) finish() {
	if len(tt.ms) == 0 {
		return
	}
	slices.Sort(tt.ms)
	sum := 0.0
	for _, m := range tt.ms {
		sum += m
	}
	tt.MsMean = round2(sum / float64(len(tt.ms)))
	mid := len(tt.ms) / 2
	tt.MsMedian = tt.ms[mid]
	if len(tt.ms)%2 == 0 {
		tt.MsMedian = (tt.ms[mid-1] + tt.ms[mid]) / 2
	}
	tt.MsMedian = round2(tt.MsMedian)
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func writeJSON(path string, s *summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func writeMarkdown(path string, s *summary) error {
	var w bytes.Buffer
	fmt.Fprintf(&w, "Repository %s at %s (`%s`): %d commits sampled with seed %d from the %d non-merge commits, dated %s to %s.\n",
		s.Repo, shortID(s.Head), s.Rev, s.Commits, s.Seed, s.History, s.Oldest, s.Newest)
	if c := s.Contents; len(c) > 0 {
		fmt.Fprintf(&w, "The real set's diffs touch %d files (%d modified, %d created, %d deleted, %d renamed, %d mode changes) in %d hunks, with %d no-newline markers.\n",
			c["files"], c["modified"], c["created"], c["deleted"], c["renamed"], c["mode-changes"], c["hunks"], c["no-newline-markers"])
	}
	if len(s.Skipped) > 0 {
		fmt.Fprintf(&w, "Commits passed over while sampling: %s.\n", formatCounts(s.Skipped))
	}
	if len(s.DamageSkipped) > 0 {
		fmt.Fprintf(&w, "Left out of the damaged set: %s.\n", formatCounts(s.DamageSkipped))
	}
	var sets []*setTally
	for _, st := range s.Sets {
		if st.Kind == "" {
			sets = append(sets, st)
		}
	}
	fmt.Fprintln(&w)
	w.WriteString("| tool |")
	for _, st := range sets {
		fmt.Fprintf(&w, " %s (%d): exact | silent wrong | refused | failed, changed | ms/case |", st.Set, st.Cases)
	}
	w.WriteString("\n|---|" + strings.Repeat("--:|", 5*len(sets)) + "\n")
	for i, name := range s.Tools {
		fmt.Fprintf(&w, "| %s |", name)
		for _, st := range sets {
			tt := st.Tools[i]
			fmt.Fprintf(&w, " %d (%s) | %d | %d | %d | %.1f |", tt.Exact, percent(tt.Exact, st.Cases),
				tt.SilentWrong, tt.Refused, tt.FailedChanged, tt.MsMedian)
		}
		w.WriteString("\n")
	}

	var kinds []*setTally
	for _, st := range s.Sets {
		if st.Kind != "" {
			kinds = append(kinds, st)
		}
	}
	if len(kinds) > 0 {
		w.WriteString("\nDamaged set by kind; each cell is exact / silent wrong / refused / failed, changed:\n\n| kind | cases |")
		for _, name := range s.Tools {
			fmt.Fprintf(&w, " %s |", name)
		}
		w.WriteString("\n|---|--:|" + strings.Repeat("--:|", len(s.Tools)) + "\n")
		for _, st := range kinds {
			fmt.Fprintf(&w, "| %s | %d |", st.Kind, st.Cases)
			for _, tt := range st.Tools {
				fmt.Fprintf(&w, " %d / %d / %d / %d |", tt.Exact, tt.SilentWrong, tt.Refused, tt.FailedChanged)
			}
			w.WriteString("\n")
		}
	}
	if path == "-" {
		_, err := io.Copy(os.Stdout, &w)
		return err
	}
	return os.WriteFile(path, w.Bytes(), 0o644)
}

func percent(n, of int) string {
	if of == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(of))
}

func formatCounts(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func shortID(id string) string { return id[:min(12, len(id))] }

// writeFailures writes one txtar per non-exact result of the dump tools:
// the patch, the files before, the expected files and what the tool left,
// in the layout replay reads (see archived).
func writeFailures(dir, root string, cases []*benchCase, dump []string, tools []tool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, bc := range cases {
		for i, res := range bc.Results {
			if res.Outcome == outcomeExact || !slices.Contains(dump, toolKey(tools[i].name)) {
				continue
			}
			name := fmt.Sprintf("%s-%s-%s-%s-%s.txtar", bc.Set, orDash(bc.Kind), shortID(bc.Commit),
				toolKey(res.Tool), res.Outcome)
			if err := os.WriteFile(filepath.Join(dir, name), txtar.Format(failureArchive(root, bc, res)), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// toolKey maps a display name ("git apply") back to its -tools key ("git").
func toolKey(name string) string {
	key, _, _ := strings.Cut(name, " ")
	return key
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// The workspace's absolute path in the patch becomes $ROOT (see replay).
func failureArchive(root string, bc *benchCase, res *result) *txtar.Archive {
	var c strings.Builder
	fmt.Fprintf(&c, "set: %s\nkind: %s\ncommit: %s\nroot: %s\ntool: %s\noutcome: %s\nexit: %d\n",
		bc.Set, orDash(bc.Kind), bc.Commit, filepath.Base(root), res.Tool, res.Outcome, res.Exit)
	if res.Stderr != "" {
		fmt.Fprintf(&c, "output:\n%s\n", indent(res.Stderr))
	}
	a := &txtar.Archive{Comment: []byte(c.String())}
	patch := bytes.ReplaceAll(bc.patch, []byte(filepath.ToSlash(root)), []byte(rootPlaceholder))
	a.Files = append(a.Files, txtar.File{Name: "diff", Data: patch})
	add := func(prefix string, files map[string][]byte) {
		for _, p := range sortedKeys(files) {
			name, b := prefix+p, files[p]
			if len(b) > 0 && b[len(b)-1] != '\n' {
				name += nonlSuffix
			}
			a.Files = append(a.Files, txtar.File{Name: name, Data: b})
		}
	}
	add("in/", bc.before)
	add("out/", bc.after)
	var gone []string
	for _, p := range sortedKeys(bc.before) {
		if _, ok := bc.after[p]; !ok {
			gone = append(gone, p)
		}
	}
	if len(gone) > 0 {
		a.Files = append(a.Files, txtar.File{Name: "gone", Data: []byte(strings.Join(gone, "\n") + "\n")})
	}
	add("got/", res.got)
	return a
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
