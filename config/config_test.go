package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLayers(t *testing.T) {
	ws := t.TempDir()
	home := t.TempDir()
	user := filepath.Join(home, "config.toml")
	write(t, user, "upstream = \"http://user:1\"\ndialect = \"rag\"\nmax_turns = 7\ntoken = \"s3cret\"\n")
	write(t, filepath.Join(ws, WorkspaceFile), "upstream = \"http://ws:1\"\n")
	s, err := Load(Options{
		Workspace: ws,
		UserFile:  user,
		Flags:     map[string]string{"max_turns": "9"},
		Getenv:    env(map[string]string{"SMITH_DIALECT": "oracle", "HOME": home}),
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key, want string
		src       Source
	}{
		{"upstream", "http://ws:1", SourceWorkspace},
		{"dialect", "oracle", SourceEnv},
		{"max_turns", "9", SourceFlag},
		{"token", "s3cret", SourceUser},
		{"idle_timeout", "60s", SourceDefault},
	}
	for _, c := range cases {
		v, _ := s.Lookup(c.key)
		if v.Value != c.want || v.Source != c.src {
			t.Errorf("%s = %q from %s, want %q from %s", c.key, v.Value, v.Source, c.want, c.src)
		}
	}
	if v, _ := s.Lookup("token"); strings.Contains(v.Display(), "s3cret") {
		t.Errorf("token displayed as %q", v.Display())
	}
	if s.Int("max_turns") != 9 {
		t.Errorf("Int(max_turns) = %d", s.Int("max_turns"))
	}
}

func TestDiscoveryAndDefault(t *testing.T) {
	ws := t.TempDir()
	s, err := Load(Options{Workspace: ws, UserFile: filepath.Join(ws, "none.toml"), Getenv: env(nil),
		Discover: func(string) (string, error) { return "http://127.0.0.1:9999", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Lookup("upstream"); v.Value != "http://127.0.0.1:9999" || v.Source != SourceDiscovery {
		t.Errorf("upstream = %+v, want discovery", v)
	}
	s, err = Load(Options{Workspace: ws, UserFile: filepath.Join(ws, "none.toml"), Getenv: env(nil),
		Discover: func(string) (string, error) { return "", errors.New("no server") }})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Lookup("upstream"); v.Value != DefaultUpstream || v.Source != SourceDefault {
		t.Errorf("upstream = %+v, want default", v)
	}
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name, file string
		flags      map[string]string
		want       []string
	}{
		{"unknown key", "upstrem = \"http://x\"\n", nil, []string{WorkspaceFile, "unknown key upstrem", "known keys"}},
		{"syntax", "upstream = \n", nil, []string{WorkspaceFile, "line 1"}},
		{"bad url", "upstream = \"ftp://x\"\n", nil, []string{"upstream", WorkspaceFile, "not an http"}},
		{"bad dialect flag", "", map[string]string{"dialect": "klingon"}, []string{"dialect", "--dialect", "unknown dialect"}},
		{"bad duration", "idle_timeout = \"soon\"\n", nil, []string{"idle_timeout", "duration"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			if c.file != "" {
				write(t, filepath.Join(ws, WorkspaceFile), c.file)
			}
			_, err := Load(Options{Workspace: ws, Flags: c.flags, UserFile: filepath.Join(ws, "none.toml"), Getenv: env(nil)})
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestFindWorkspace(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := FindWorkspace(sub)
	if err != nil || got != root {
		t.Errorf("FindWorkspace(sub) = %q, %v; want %q", got, err, root)
	}
	plain := t.TempDir()
	if got, _ := FindWorkspace(plain); got != plain {
		t.Errorf("FindWorkspace(plain) = %q, want itself", got)
	}
}
