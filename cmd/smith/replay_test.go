package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/smith-dev/smith/protocol"
	"golang.org/x/tools/txtar"
)

var updateReplay = flag.Bool("update-replay", false, "rewrite the outputs in testdata/replay/*.txtar")

// runSmith runs the smith command line in-process with captured streams.
func runSmith(t *testing.T, stdin string, env map[string]string, tty bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	s := &IOStreams{
		In: strings.NewReader(stdin), Out: &out, Err: &errb,
		OutTTY: tty, ErrTTY: tty,
		Getenv: func(k string) string { return env[k] },
	}
	code = run(args, s)
	return code, out.String(), errb.String()
}

// replayModes are the outputs every golden case records, by section name.
var replayModes = []struct {
	section string
	flags   []string
}{
	{"human", nil},
	{"json", []string{"--json"}},
	{"raw", []string{"--raw"}},
}

// TestReplayGolden replays each testdata/replay/*.txtar's in.sse (with the
// flags of its "flags" section, one per line) in every output mode, whole
// and cut into reads of 1 and of 3,5,8 bytes, and compares the output and
// the exit status with the case's sections.
func TestReplayGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/replay/*.txtar")
	if len(files) == 0 {
		t.Fatal("no test cases")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string][]byte{}
			for _, f := range ar.Files {
				sections[f.Name] = f.Data
			}
			in := filepath.Join(t.TempDir(), "in.sse")
			if err := os.WriteFile(in, sections["in.sse"], 0o644); err != nil {
				t.Fatal(err)
			}
			var flags []string
			for _, l := range strings.Split(string(sections["flags"]), "\n") {
				if l != "" {
					flags = append(flags, l)
				}
			}
			for _, m := range replayModes {
				args := append(append(append([]string{"replay"}, flags...), m.flags...), in)
				code, out, errs := runSmith(t, "", nil, false, args...)
				got := fmt.Sprintf("%s[exit %d]\n", out, code)
				if errs != "" {
					t.Errorf("%s: stderr: %s", m.section, errs)
				}
				for _, sizes := range []string{"1", "3,5,8"} {
					c2, out2, _ := runSmith(t, "", nil, false, append(append([]string{}, args[:len(args)-1]...), "--chunk-sizes", sizes, in)...)
					if got2 := fmt.Sprintf("%s[exit %d]\n", out2, c2); got2 != got {
						t.Errorf("%s: --chunk-sizes %s changes the output (-whole +chunked):\n%s", m.section, sizes, cmp.Diff(got, got2))
					}
				}
				if *updateReplay {
					sections[m.section] = []byte(got)
					continue
				}
				want, ok := sections[m.section]
				if !ok {
					t.Errorf("%s: no %q section; run with -update-replay", file, m.section)
					continue
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", m.section, diff)
				}
			}
			if *updateReplay {
				ar.Files = nil
				if f, ok := sections["flags"]; ok {
					ar.Files = append(ar.Files, txtar.File{Name: "flags", Data: f})
				}
				ar.Files = append(ar.Files, txtar.File{Name: "in.sse", Data: sections["in.sse"]})
				for _, m := range replayModes {
					ar.Files = append(ar.Files, txtar.File{Name: m.section, Data: sections[m.section]})
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestReplayStdin(t *testing.T) {
	stream := "data: {\"type\": \"delta\", \"content\": \"Hi\"}\n\ndata: {\"type\": \"done\", \"citations\": []}\n\n"
	code, out, _ := runSmith(t, stream, nil, false, "replay", "--json", "-")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, `{"type":"summary","dialect":"textbook","protocol":null,`) || !strings.Contains(last, `"text":"Hi"`) {
		t.Errorf("summary line = %s", last)
	}
}

func TestReplayColor(t *testing.T) {
	stream := "data: {\"dialog_id\": \"d\", \"type\": \"reasoning\", \"content\": \"hmm\"}\n\n" +
		"data: {\"dialog_id\": \"d\", \"type\": \"chat\", \"content\": \"ok\"}\n\ndata: {\"dialog_id\": \"d\", \"type\": \"done\", \"done\": true}\n\n"
	tests := []struct {
		name    string
		tty     bool
		env     map[string]string
		dimmed  bool
		explain string
	}{
		{"terminal", true, nil, true, "reasoning is dimmed on a terminal"},
		{"terminal with NO_COLOR", true, map[string]string{"NO_COLOR": "1"}, false, "NO_COLOR turns color off"},
		{"pipe", false, nil, false, "no color when stdout is not a terminal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, _ := runSmith(t, stream, tt.env, tt.tty, "replay", "-")
			if code != ExitOK {
				t.Fatalf("exit %d", code)
			}
			if got := strings.Contains(out, ansiDim+"hmm"+ansiReset); got != tt.dimmed {
				t.Errorf("%s; output %q", tt.explain, out)
			}
			if strings.Contains(out, "\x1b[") != tt.dimmed {
				t.Errorf("escape codes present = %v, want %v: %q", !tt.dimmed, tt.dimmed, out)
			}
		})
	}
}

func TestReplayUsageErrors(t *testing.T) {
	good := filepath.Join(t.TempDir(), "ok.sse")
	os.WriteFile(good, []byte("data: {\"type\": \"done\", \"done\": true}\n\n"), 0o644)
	missing := filepath.Join(t.TempDir(), "missing.sse")
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"missing file", []string{"replay", missing}, "cannot read " + missing},
		{"directory", []string{"replay", t.TempDir()}, "cannot read"},
		{"no file", []string{"replay"}, "smith replay takes one FILE.sse, got 0 (a recorded SSE response body, or - for standard input"},
		{"unknown dialect", []string{"replay", "--dialect", "klingon", good}, `unknown dialect "klingon"`},
		{"bad chunk size", []string{"replay", "--chunk-sizes", "3,0", good}, "bad --chunk-sizes"},
		{"bad header", []string{"replay", "--header", "no colon", good}, "bad --header"},
		{"raw and json", []string{"replay", "--raw", "--json", good}, "choose one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runSmith(t, "", nil, false, tt.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if !strings.Contains(errs, tt.want) {
				t.Errorf("stderr %q lacks %q", errs, tt.want)
			}
			if out != "" {
				t.Errorf("stdout should be empty, got %q", out)
			}
		})
	}
}

// FuzzReplayChunkSizes checks the promise of --chunk-sizes: however the
// body is cut into reads, replay prints the same thing and exits the same
// way, in every output mode. (It calls the replay itself, not the whole
// command line, to keep executions cheap.)
func FuzzReplayChunkSizes(f *testing.F) {
	files, _ := filepath.Glob("testdata/replay/*.txtar")
	for _, file := range files {
		if ar, err := txtar.ParseFile(file); err == nil {
			for _, af := range ar.Files {
				if af.Name == "in.sse" {
					f.Add(af.Data, uint8(1), uint8(3))
				}
			}
		}
	}
	f.Add([]byte("data: {\"content\": \"a\r\nb\"}\r\rdata: x\n"), uint8(2), uint8(7))
	replay := func(o *replayOptions, sizes []int, body []byte) string {
		var out bytes.Buffer
		s := &IOStreams{In: strings.NewReader(""), Out: &out, Err: &out, Getenv: func(string) string { return "" }}
		err := replayBody(context.Background(), s, o, protocol.DialectAuto, nil, sizes, bytes.NewReader(body))
		return fmt.Sprintf("%s[%v]", out.String(), err)
	}
	f.Fuzz(func(t *testing.T, body []byte, a, b uint8) {
		sizes := []int{int(a)%16 + 1, int(b)%16 + 1}
		for _, o := range []*replayOptions{{json: true}, {raw: true}, {}} {
			whole, cut := replay(o, nil, body), replay(o, sizes, body)
			if whole != cut {
				t.Fatalf("%+v, sizes %v:\n%s", *o, sizes, cmp.Diff(whole, cut))
			}
		}
	})
}

// countingWriter counts the Write calls that reach it.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestReplayBuffersOutput: replay writes its output in large pieces, not
// one write per event (a write per line cost as much as all the parsing),
// and the bytes are the same as the unbuffered ones, in every mode.
func TestReplayBuffersOutput(t *testing.T) {
	var in strings.Builder
	in.WriteString("data: {\"dialog_id\": \"d\", \"type\": \"chat_start\"}\n\n")
	for i := range 3000 {
		fmt.Fprintf(&in, "data: {\"dialog_id\": \"d\", \"type\": \"chat\", \"content\": \"delta %d \\\"q\\\" \\u2028\\n\"}\n\n", i)
	}
	in.WriteString("data: {\"dialog_id\": \"d\", \"type\": \"tool_call\", \"name\": \"x\", \"args\": {\"a\": 1}}\n\n")
	in.WriteString("data: {\"dialog_id\": \"d\", \"type\": \"done\", \"done\": true}\n\n")
	for _, o := range []*replayOptions{{json: true}, {raw: true}, {}} {
		var w countingWriter
		s := &IOStreams{In: strings.NewReader(""), Out: &w, Err: io.Discard, Getenv: func(string) string { return "" }}
		if err := replayBody(context.Background(), s, o, protocol.DialectAuto, nil, nil, strings.NewReader(in.String())); err != nil {
			t.Fatalf("%+v: %v", *o, err)
		}
		if max := w.Len()/replayOutBuffer + 2; w.writes > max {
			t.Errorf("%+v: %d writes for %d bytes, want at most %d", *o, w.writes, w.Len(), max)
		}
		// The unbuffered rendering, event by event, with encoding/json.
		var want bytes.Buffer
		if o.json {
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			sum := protocol.ReadTurn(context.Background(), strings.NewReader(in.String()), protocol.StreamOptions{IdleTimeout: -1}, func(e protocol.Event) { enc.Encode(e) })
			enc.Encode(sum)
			if diff := cmp.Diff(want.String(), w.String()); diff != "" {
				t.Errorf("--json output differs from encoding/json's (-want +got):\n%s", diff)
			}
		}
	}
}

// TestCollectingReader: replay's reader of the recording passes every byte
// through unchanged and collects garbage once per replayCollectEvery bytes
// read, whatever the sizes of the reads.
func TestCollectingReader(t *testing.T) {
	in := bytes.Repeat([]byte("data: {\"type\": \"chat\", \"content\": \"x\"}\n\n"), 3*replayCollectEvery/40+1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var got bytes.Buffer
	if _, err := io.CopyBuffer(&got, &collectingReader{r: bytes.NewReader(in)}, make([]byte, 40<<10)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if !bytes.Equal(got.Bytes(), in) {
		t.Errorf("read %d bytes, not the %d given", got.Len(), len(in))
	}
	if n, want := after.NumForcedGC-before.NumForcedGC, uint32(len(in)/replayCollectEvery); n < want {
		t.Errorf("%d collections for %d bytes, want %d (one per %d bytes)", n, len(in), want, replayCollectEvery)
	}
}
