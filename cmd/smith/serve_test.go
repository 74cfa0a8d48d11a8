package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smith-dev/smith/editor"
	"github.com/smith-dev/smith/protocol"
)

// TestServeResolverLayers: flags win over initializationOptions, which win
// over the environment, the workspace's .smith.toml and the defaults.
func TestServeResolverLayers(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, ".smith.toml"), []byte("max_turns = 7\ndialect = \"oracle\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"SMITH_DIALECT":   "textbook",
		"SMITH_STATE_DIR": filepath.Join(ws, "state-from-env"),
		"HOME":            t.TempDir(),
	}
	s := &IOStreams{Getenv: func(k string) string { return env[k] }}
	o := &serveOptions{settings: map[string]string{"upstream": "http://127.0.0.1:1111"}}
	init := editor.InitOptions{Upstream: "http://127.0.0.1:2222", Dialect: "rag", IdleTimeout: "5s"}

	cfg, err := o.resolver(s)(context.Background(), ws, init)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"upstream (flag over init)", cfg.Upstream, "http://127.0.0.1:1111"},
		{"dialect (init over env and file)", cfg.Dialect, protocol.DialectRAG},
		{"idle timeout (init over default)", cfg.IdleTimeout, 5 * time.Second},
		{"state dir (env)", cfg.StateDir, filepath.Join(ws, "state-from-env")},
		{"max turns (workspace file)", cfg.MaxTurns, 7},
		{"max message (default)", cfg.MaxMessage, 5000},
		{"workspace (editor's root)", cfg.Workspace, ws},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	// --workspace wins over the editor's root; a bad value names its source.
	other := t.TempDir()
	o.workspace = other
	if cfg, err = o.resolver(s)(context.Background(), ws, editor.InitOptions{}); err != nil || cfg.Workspace != other {
		t.Errorf("with --workspace: %q, %v", cfg.Workspace, err)
	}
	_, err = o.resolver(s)(context.Background(), ws, editor.InitOptions{IdleTimeout: "soon"})
	if err == nil || !strings.Contains(err.Error(), "initializationOptions.idleTimeout") {
		t.Errorf("an invalid initializationOptions.idleTimeout gave %v", err)
	}
}

// TestServeResolverDiscovery: with no upstream named anywhere, a ready
// AgentSmithy server of the workspace is used, else the default.
func TestServeResolverDiscovery(t *testing.T) {
	s := &IOStreams{Getenv: func(k string) string {
		if k == "HOME" {
			return "/nonexistent-home"
		}
		return ""
	}}
	o := &serveOptions{settings: map[string]string{}}

	plain := t.TempDir()
	cfg, err := o.resolver(s)(context.Background(), plain, editor.InitOptions{})
	if err != nil || cfg.Upstream != "http://127.0.0.1:8765" {
		t.Errorf("no server anywhere: upstream %q, %v; want the default", cfg.Upstream, err)
	}

	ws := t.TempDir()
	status := fmt.Sprintf(`{"server_status": "ready", "server_pid": %d, "port": 43210}`, os.Getpid())
	if err := os.MkdirAll(filepath.Join(ws, ".agentsmithy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".agentsmithy", "status.json"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = o.resolver(s)(context.Background(), ws, editor.InitOptions{})
	if err != nil || cfg.Upstream != "http://localhost:43210" {
		t.Errorf("discovered server: upstream %q, %v", cfg.Upstream, err)
	}
	// initializationOptions still win over discovery.
	cfg, _ = o.resolver(s)(context.Background(), ws, editor.InitOptions{Upstream: "http://127.0.0.1:5555"})
	if cfg.Upstream != "http://127.0.0.1:5555" {
		t.Errorf("initializationOptions.upstream lost to discovery: %q", cfg.Upstream)
	}
}
