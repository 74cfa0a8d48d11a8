package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the .golden files of TestGolden")

var allDialects = []Dialect{DialectAgentSmithy, DialectRAG, DialectTextbook, DialectLifecycle, DialectOracle}

// golden is what one recorded stream amounts to.
type golden struct {
	Events  []Event  `json:"events"`
	Summary *Summary `json:"summary"`
}

// TestGolden reads every testdata/<dialect>/*.sse stream with auto-detection
// and compares the normalized events and the summary with *.golden. A
// stream named *.explicit.sse is read with the dialect of its directory set
// explicitly instead.
func TestGolden(t *testing.T) {
	var files []string
	for _, d := range allDialects {
		fs, err := filepath.Glob(filepath.Join("testdata", string(d), "*.sse"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	perDialect := map[string]int{}
	for _, f := range files {
		dialect := filepath.Base(filepath.Dir(f))
		perDialect[dialect]++
		t.Run(dialect+"/"+strings.TrimSuffix(filepath.Base(f), ".sse"), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			opts := StreamOptions{TurnID: "t1", IdleTimeout: -1}
			if strings.HasSuffix(f, ".explicit.sse") {
				opts.Dialect = Dialect(dialect)
			}
			if dialect == "rag" {
				opts.Header = map[string][]string{"Server-Timing": {"embed;dur=18.2, search;dur=0.4, total;dur=18.9"}}
			}
			var got golden
			got.Summary = ReadTurn(context.Background(), bytes.NewReader(in), opts, func(e Event) {
				got.Events = append(got.Events, e)
			})
			checkTurnInvariants(t, got.Events)
			if string(got.Summary.Dialect) != dialect {
				t.Errorf("dialect = %q, want %q", got.Summary.Dialect, dialect)
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, '\n')
			gf := strings.TrimSuffix(f, ".sse") + ".golden"
			if *update {
				if err := os.WriteFile(gf, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(gf)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(out)); diff != "" {
				t.Errorf("%s differs (-want +got); run with -update if the change is intended:\n%s", gf, diff)
			}
		})
	}
	for _, d := range allDialects {
		if perDialect[string(d)] < 5 {
			t.Errorf("testdata/%s has %d streams, want at least 5", d, perDialect[string(d)])
		}
	}
}

// checkTurnInvariants asserts what every turn must satisfy: Seq counts from
// 1, exactly one turnEnd and it is last.
func checkTurnInvariants(t *testing.T, evs []Event) {
	t.Helper()
	ends := 0
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		if e.TurnID != "t1" {
			t.Errorf("event %d has turnId %q", i, e.TurnID)
		}
		if e.Type == KindTurnEnd {
			ends++
			if i != len(evs)-1 {
				t.Errorf("turnEnd at %d of %d events", i, len(evs))
			}
		}
	}
	if ends != 1 {
		t.Errorf("%d turnEnd events, want 1", ends)
	}
}
