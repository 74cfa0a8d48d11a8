package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/smith-dev/smith/config"
	"github.com/smith-dev/smith/protocol/upstream"
)

// demoProject is the example project `smith demo` copies. Its files carry a
// .txt suffix so that the go tool does not treat them as part of smith.
//
//go:embed demoproject
var demoProject embed.FS

const demoMessage = "rename total to subtotal in main.go"

type demoOptions struct {
	keepRunning bool
	dir         string
	message     string
	stateDir    string
}

func newDemoCmd(s *IOStreams) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run smith offline on an example project, start to finish",
		Long: `Copy a small example project to a temporary folder, start the embedded upstream
on it (no network, no set-up), send one chat turn that proposes a change, stream the
answer, show the diff, apply it, show the result and the command that undoes it.

The upstream speaks AgentSmithy's legacy protocol (v0), in which the agent proposes
diffs and smith applies them. With --keep-running the upstream stays up afterwards
and smith prints how to point an editor at it.`,
		Example: `  smith demo
  smith demo --keep-running
  smith demo --message "add a comment to main in main.go"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.keepRunning, "keep-running", false, "leave the upstream running and print how to connect an editor")
	f.StringVar(&o.dir, "dir", "", "copy the example project here instead of a new temporary folder (must not exist)")
	f.StringVar(&o.message, "message", demoMessage, "the chat message of the demo turn")
	f.StringVar(&o.stateDir, "state-dir", "", "where smith keeps its journal (default: $XDG_STATE_HOME/smith)")
	return cmd
}

func runDemo(ctx context.Context, s *IOStreams, o *demoOptions) error {
	if o.dir != "" {
		if _, err := os.Lstat(o.dir); err == nil {
			return usageErrorf("demo folder %s already exists: pick a new path with --dir", o.dir)
		}
	}
	// What would stop the turn is said before anything is copied or
	// started, so that a refusal leaves no demo folder behind.
	if strings.TrimSpace(o.message) == "" {
		return usageErrorf("--message is empty: give the demo turn a chat message, such as %q, or leave --message out", demoMessage)
	}
	pre := map[string]string{}
	if o.stateDir != "" {
		pre["state_dir"] = o.stateDir
	}
	set, err := config.Load(config.Options{Flags: pre, Getenv: s.Getenv})
	if err != nil {
		return usageErrorf("%v", err)
	}
	if err := stateDirAtStart(set, ""); err != nil {
		return err
	}
	dir, err := copyDemoProject(o.dir)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	color := s.ColorErr()
	step := func(format string, args ...any) {
		fmt.Fprintln(s.Err, style(color, ansiBold, "▶ "+fmt.Sprintf(format, args...)))
	}
	step("example project copied to %s", dir)

	up, err := upstream.New(upstream.Options{Workspace: dir, Protocol: upstream.ProtocolV0, DeltaDelay: 15 * time.Millisecond})
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	url, err := up.Start(ctx, "127.0.0.1:0")
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("starting the embedded upstream: %w", err)}
	}
	defer up.Close()
	step("embedded upstream listening at %s (AgentSmithy legacy protocol: the agent proposes diffs, smith applies them)", url)

	flags := map[string]string{"upstream": url}
	if o.stateDir != "" {
		flags["state_dir"] = o.stateDir
	}
	set, err = config.Load(config.Options{Workspace: dir, Flags: flags, Getenv: s.Getenv})
	if err != nil {
		return usageErrorf("%v", err)
	}
	step("smith chat %q", o.message)
	copts := &chatOptions{yes: true}
	before := projectFiles(dir)
	if err := runChat(ctx, s, copts, set, []string{o.message}); err != nil {
		return err
	}
	// Say what the turn changed, and offer the undo only for a change.
	after := projectFiles(dir)
	names := maps.Clone(before)
	maps.Copy(names, after)
	var changed []string // besides main.go, which is shown
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if before[name] != after[name] && name != "main.go" {
			changed = append(changed, name)
		}
	}
	mainChanged := before["main.go"] != after["main.go"]
	switch {
	case !mainChanged && len(changed) == 0:
		step("the agent changed no file; ask it for a change, e.g. smith demo --message %q", demoMessage)
	default:
		if len(changed) > 0 {
			step("changed: %s", strings.Join(changed, ", "))
		}
		if mainChanged {
			step("main.go now reads:")
			fmt.Fprint(s.Out, after["main.go"])
		}
		undo := fmt.Sprintf("smith undo -C %s", shellQuote(dir))
		if o.stateDir != "" {
			undo += " --state-dir " + shellQuote(o.stateDir)
		}
		step("undo the change with:  %s", undo)
	}
	step("the project stays in %s", dir)
	if !o.keepRunning {
		return nil
	}
	fmt.Fprintf(s.Err, `
The upstream keeps running at %[1]s. Point an editor or the CLI at it:
  cd %[2]s && smith chat --upstream %[1]s "add a comment to main in main.go"
  smith serve --upstream %[1]s --workspace %[2]s        # any LSP client, on stdio
  Neovim:  require('smith').setup{ cmd = {'smith', 'serve', '--upstream', '%[1]s'} }
Press Ctrl-C to stop it.
`, url, shellQuote(dir))
	sig, stop := signal.NotifyContext(context.WithoutCancel(ctx), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-sig.Done()
	return nil
}

// copyDemoProject writes the example project into dir (a new temporary
// folder when dir is empty) and returns its absolute path.
func copyDemoProject(dir string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "smith-demo-")
		if err != nil {
			return "", fmt.Errorf("creating the demo folder: %w", err)
		}
		dir = d
	} else {
		if _, err := os.Stat(dir); err == nil {
			return "", fmt.Errorf("demo folder %s already exists: pick a new path with --dir", dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("creating the demo folder: %w", err)
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	err = fs.WalkDir(demoProject, "demoproject", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := demoProject.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, "demoproject/"), ".txt")
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("copying the example project to %s: %w", dir, err)
	}
	return dir, nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// projectFiles reads the files of the demo project (not the upstream's
// .agentsmithy folder), keyed by slash path, "" for none.
func projectFiles(dir string) map[string]string {
	files := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && d.Name() == ".agentsmithy":
			return filepath.SkipDir
		case d.Type().IsRegular():
			if b, err := os.ReadFile(p); err == nil {
				rel, _ := filepath.Rel(dir, p)
				files[filepath.ToSlash(rel)] = string(b)
			}
		}
		return nil
	})
	return files
}
