package diffapply

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden report sections of testdata/cases/*.txtar")

// TestCases runs every testdata/cases/*.txtar archive:
//
//	-- args --        options, one per line: strip=N, strict, reverse, target=P, hunks=1,3
//	-- diff --        the diff
//	-- in/PATH --     a file before
//	-- out/PATH --    the file after (all out/ files given: byte-exact)
//	-- gone --        paths that must not exist after
//	-- report --      golden: the plan, one line per file and hunk (-update)
//
// Without out/ sections the case must refuse or conflict, and every file
// must be left as it was. A name ending in .nonl loses its final newline;
// .crlf turns every "\n" into "\r\n" (applied in that order, outermost
// suffix first), so txtar can hold such bytes.
func TestCases(t *testing.T) {
	paths, err := filepath.Glob("testdata/cases/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			runCase(t, path)
		})
	}
}

func decodeName(name string, data []byte) (string, []byte) {
	for {
		switch {
		case strings.HasSuffix(name, ".nonl"):
			name = strings.TrimSuffix(name, ".nonl")
			data = bytes.TrimSuffix(data, []byte("\n"))
		case strings.HasSuffix(name, ".crlf"):
			name = strings.TrimSuffix(name, ".crlf")
			data = bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
		default:
			return name, data
		}
	}
}

type caseSpec struct {
	opts      Options
	ids       []int
	noReverse bool // the diff loses information, so reversing cannot restore the file
	diff      []byte
	in        map[string][]byte
	out       map[string][]byte
	gone      []string
	report    string
}

func loadCase(t *testing.T, ar *txtar.Archive) *caseSpec {
	c := &caseSpec{in: map[string][]byte{}, out: map[string][]byte{}}
	for _, f := range ar.Files {
		name, data := decodeName(f.Name, f.Data)
		switch {
		case name == "args":
			for _, a := range strings.Fields(string(data)) {
				k, v, _ := strings.Cut(a, "=")
				switch k {
				case "strip":
					fmt.Sscan(v, &c.opts.Strip)
				case "noreverse":
					c.noReverse = true
				case "strict":
					c.opts.Strict = true
				case "reverse":
					c.opts.Reverse = true
				case "target":
					c.opts.Target = v
				case "hunks":
					for _, s := range strings.Split(v, ",") {
						var id int
						fmt.Sscan(s, &id)
						c.ids = append(c.ids, id)
					}
				default:
					t.Fatalf("unknown arg %q", a)
				}
			}
		case name == "diff":
			c.diff = data
		case name == "gone":
			c.gone = strings.Fields(string(data))
		case name == "report":
			c.report = string(data)
		case strings.HasPrefix(name, "in/"):
			c.in[strings.TrimPrefix(name, "in/")] = data
		case strings.HasPrefix(name, "out/"):
			c.out[strings.TrimPrefix(name, "out/")] = data
		default:
			t.Fatalf("unknown section %q", f.Name)
		}
	}
	return c
}

func runCase(t *testing.T, path string) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := loadCase(t, ar)
	root := t.TempDir()
	for name, data := range c.in {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, root)
	report, applyErr := planAndApply(root, c)
	if *update {
		writeReport(t, path, ar, report)
	} else if diff := cmp.Diff(c.report, report); diff != "" {
		t.Errorf("report differs (-want +got; run with -update if the change is right):\n%s", diff)
	}
	after := snapshot(t, root)
	if len(c.out) == 0 {
		if applyErr == nil {
			t.Fatalf("expected a refusal or conflict, but it applied")
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("a refused patch changed files (-before +after):\n%s", diff)
		}
		return
	}
	if applyErr != nil {
		t.Fatalf("apply: %v", applyErr)
	}
	for name, want := range c.out {
		got, ok := after[name]
		if !ok {
			t.Errorf("%s: missing after apply", name)
			continue
		}
		if got != string(want) {
			t.Errorf("%s after apply:\n got %q\nwant %q", name, got, want)
		}
	}
	for _, name := range c.gone {
		if _, ok := after[name]; ok {
			t.Errorf("%s still exists", name)
		}
	}
	// Reverse what was applied and get the pre-image back.
	if c.opts.Target == "" && c.ids == nil && !c.noReverse {
		ropts := c.opts
		ropts.Reverse = !ropts.Reverse
		p, err := Plan(root, c.diff, ropts)
		if err != nil {
			t.Fatalf("reverse plan: %v", err)
		}
		if err := p.Apply(context.Background(), nil, ""); err != nil {
			t.Fatalf("reverse apply: %v", err)
		}
		if diff := cmp.Diff(before, snapshot(t, root)); diff != "" {
			t.Errorf("reverse apply did not restore the files (-before +after):\n%s", diff)
		}
	}
}

// planAndApply returns the report: repairs, then per file and hunk.
func planAndApply(root string, c *caseSpec) (string, error) {
	var b strings.Builder
	p, err := Plan(root, c.diff, c.opts)
	if err != nil {
		fmt.Fprintf(&b, "error: %s\n", strings.ReplaceAll(err.Error(), root, "$ROOT"))
		return b.String(), err
	}
	for _, r := range p.Repairs {
		fmt.Fprintf(&b, "repair: %s\n", r)
	}
	for _, f := range p.Files {
		fmt.Fprintf(&b, "file %d %s %s", f.ID, f.Op, f.Path)
		if f.OldPath != "" {
			fmt.Fprintf(&b, " from %s", f.OldPath)
		}
		if f.Mode != 0 {
			fmt.Fprintf(&b, " mode %o", f.Mode)
		}
		b.WriteString("\n")
		if f.Conflict != nil {
			fmt.Fprintf(&b, "  refused: %s\n", f.Conflict)
		}
		for _, h := range f.Hunks {
			if h.Conflict != nil {
				fmt.Fprintf(&b, "  hunk %d: conflict: %s\n", h.ID, h.Conflict)
				continue
			}
			if f.Conflict == nil {
				fmt.Fprintf(&b, "  hunk %d: %s line %d offset %d fuzz %d", h.ID, h.Level, h.Line, h.Offset, h.Fuzz)
				b.WriteString("\n")
			}
		}
	}
	err = p.Apply(context.Background(), c.ids, "")
	if err != nil {
		fmt.Fprintf(&b, "apply: %s\n", strings.ReplaceAll(err.Error(), root, "$ROOT"))
	}
	return b.String(), err
}

func writeReport(t *testing.T, path string, ar *txtar.Archive, report string) {
	found := false
	for i := range ar.Files {
		if ar.Files[i].Name == "report" {
			ar.Files[i].Data = []byte(report)
			found = true
		}
	}
	if !found {
		ar.Files = append(ar.Files, txtar.File{Name: "report", Data: []byte(report)})
	}
	if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot reads every regular file under root: path -> content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			m[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
