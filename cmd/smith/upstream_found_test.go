package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/smith-dev/smith/config"
)

// TestUpstreamFoundChecksWorkspace: an upstream smith found by itself (the
// default address, or discovery) is checked against the workspace before
// the engine sends it anything; one the user named is used as told.
func TestUpstreamFoundChecksWorkspace(t *testing.T) {
	ws := t.TempDir()
	noEnv := func(string) string { return "" }
	load := func(o config.Options) *config.Settings {
		t.Helper()
		o.Workspace, o.UserFile = ws, filepath.Join(ws, "no-user-config.toml")
		if o.Getenv == nil {
			o.Getenv = noEnv
		}
		set, err := config.Load(o)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	discover := func(string) (string, error) { return "http://localhost:9999", nil }
	noServer := func(string) (string, error) { return "", errors.New("no status file") }
	for _, c := range []struct {
		name  string
		set   *config.Settings
		check bool
	}{
		{"default address", load(config.Options{Discover: noServer}), true},
		{"discovered", load(config.Options{Discover: discover}), true},
		{"flag", load(config.Options{Flags: map[string]string{"upstream": "http://127.0.0.1:1"}, Discover: discover}), false},
		{"environment", load(config.Options{Getenv: func(k string) string {
			if k == "SMITH_UPSTREAM" {
				return "http://127.0.0.1:1"
			}
			return ""
		}, Discover: discover}), false},
	} {
		cfg := engineConfig(c.set)
		if cfg.CheckUpstreamWorkspace != c.check {
			t.Errorf("%s: CheckUpstreamWorkspace = %v, want %v", c.name, cfg.CheckUpstreamWorkspace, c.check)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, config.WorkspaceFile), []byte("upstream = \"http://127.0.0.1:2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if engineConfig(load(config.Options{Discover: discover})).CheckUpstreamWorkspace {
		t.Error(".smith.toml names the upstream: it must be used as told")
	}
}
