package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/smith-dev/smith/protocol"
	"github.com/smith-dev/smith/protocol/upstream"
)

// TestMain lets testscript run the real smith binary: the test binary
// re-executes itself as "smith".
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"smith": func() { os.Exit(run(os.Args[1:], stdStreams())) },
	})
}

// TestScripts runs the acceptance scripts in testdata/script/*.txtar: the
// real binary against the embedded upstream on loopback, in a fresh
// workspace ($WORK/ws) and state directory per script.
//
// Extra commands:
//
//	upstream [--protocol v0|v1|v2] [--dialect NAME] [--fault SPEC] [--dir DIR] [--replay FILE]
//	    start the embedded upstream on DIR (default $WORK/ws) and set
//	    $UPSTREAM to its URL; it stops when the script ends.
//	await-chats N
//	    wait (up to 20 s) until the upstream has received N chat requests.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, "state"))
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, "config"))
			env.Setenv("NO_COLOR", "1")
			env.Values[chatCounterKey{}] = &chatCounter{}
			return os.MkdirAll(filepath.Join(env.WorkDir, "ws"), 0o755)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"upstream":    cmdUpstream,
			"await-chats": cmdAwaitChats,
			"capture":     cmdCapture,
		},
	})
}

// cmdCapture sets the environment variable NAME to the first group of
// REGEXP in the last command's stdout: capture NAME REGEXP (for an id a
// script must pass on, such as a checkpoint).
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture NAME REGEXP")
	}
	m := regexp.MustCompile(args[1]).FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("capture: %q not found in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

// chatCounter counts the chat requests a script's upstream received; each
// script has its own (testscript Env.Values).
type chatCounter struct{ n atomic.Int64 }

type chatCounterKey struct{}

func cmdUpstream(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! upstream")
	}
	opts := upstream.Options{Workspace: ts.MkAbs("ws"), PingInterval: -1}
	for i := 0; i < len(args); i++ {
		if i+1 >= len(args) {
			ts.Fatalf("upstream: %s needs a value", args[i])
		}
		switch v := args[i+1]; args[i] {
		case "--protocol":
			opts.Protocol = v
		case "--dialect":
			opts.Dialect = protocol.Dialect(v)
		case "--fault":
			f, err := upstream.ParseFaults(v)
			ts.Check(err)
			opts.Faults = append(opts.Faults, f...)
		case "--dir":
			opts.Workspace = ts.MkAbs(v)
		case "--replay":
			b, err := os.ReadFile(ts.MkAbs(v))
			ts.Check(err)
			opts.Replay = b
		default:
			ts.Fatalf("upstream: unknown flag %s", args[i])
		}
		i++
	}
	srv, err := upstream.New(opts)
	ts.Check(err)
	counter := ts.Value(chatCounterKey{}).(*chatCounter)
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/chat") && r.Method == http.MethodPost {
			counter.n.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	ts.Defer(func() {
		srv.Close() // ends streams in flight, stalled ones too
		hs.CloseClientConnections()
		hs.Close()
	})
	ts.Setenv("UPSTREAM", hs.URL)
}

func cmdAwaitChats(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: await-chats N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	c := ts.Value(chatCounterKey{}).(*chatCounter)
	deadline := time.Now().Add(20 * time.Second)
	for c.n.Load() < int64(want) {
		if time.Now().After(deadline) {
			ts.Fatalf("await-chats: only %d of %d chat requests after 20s", c.n.Load(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintf(ts.Stdout(), "%d chat requests\n", c.n.Load())
}

// TestHelpHasExamples checks that every command's --help teaches by example.
func TestHelpHasExamples(t *testing.T) {
	root := newRootCmd(&IOStreams{Getenv: func(string) string { return "" }})
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		if c.Short == "" || c.Example == "" {
			t.Errorf("smith %s: Short %q, Example %q; every command needs a one-line summary and an example", c.Name(), c.Short, c.Example)
		}
	}
}
