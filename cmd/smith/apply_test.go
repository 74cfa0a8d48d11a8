package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestApplyScripts runs testdata/apply/*.txtar with testscript. The
// command `smith-apply ARGS` runs `smith apply -C $WORK ARGS` in-process;
// a non-zero exit prints "[exit N]" on stderr (use ! to expect it).
// Arguments ending in .patch are taken relative to $WORK.
func TestApplyScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/apply",
		Setup: func(env *testscript.Env) error {
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/.state")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"smith-apply": func(ts *testscript.TestScript, neg bool, args []string) {
				// Patch files are relative to $WORK, not to the test's directory.
				for i, a := range args {
					if strings.HasSuffix(a, ".patch") {
						args[i] = ts.MkAbs(a)
					}
				}
				var out, errb bytes.Buffer
				s := &IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: ts.Getenv}
				code := run(append([]string{"apply", "-C", ts.Getenv("WORK")}, args...), s)
				if code != 0 {
					fmt.Fprintf(&errb, "[exit %d]\n", code)
				}
				ts.Stdout().Write(out.Bytes())
				ts.Stderr().Write(errb.Bytes())
				if (code != 0) != neg {
					ts.Fatalf("smith apply %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
				}
			},
		},
	})
}
