// Package config resolves smith's settings from their layers, highest
// first: command-line flags, SMITH_* environment variables, the workspace's
// .smith.toml, the user's config file, discovery of a running AgentSmithy
// server (.agentsmithy/status.json), and built-in defaults. It records where
// every value came from so that `smith config` can say so, and it never
// prints a secret.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/smith-dev/smith/protocol"
)

// Source names the layer a value came from.
type Source string

const (
	SourceFlag      Source = "flag"
	SourceEnv       Source = "env"
	SourceWorkspace Source = "workspace"
	SourceUser      Source = "user"
	SourceDiscovery Source = "discovery"
	SourceDefault   Source = "default"
)

// DefaultUpstream is used when no layer names an upstream.
const DefaultUpstream = "http://127.0.0.1:8765"

// WorkspaceFile is the name of the per-workspace config file.
const WorkspaceFile = ".smith.toml"

// Key describes one setting.
type Key struct {
	Name    string // TOML key and flag name with '_' → '-'
	Env     string // environment variable
	Default string
	Secret  bool // never printed
	Help    string
	check   func(string) error
}

// Keys lists every setting smith reads, in display order.
func Keys() []Key {
	return []Key{
		{Name: "upstream", Env: "SMITH_UPSTREAM", Help: "base URL of the chat server", check: checkURL},
		{Name: "dialect", Env: "SMITH_DIALECT", Help: "payload dialect: agentsmithy, rag, textbook, lifecycle, oracle (empty: detect)", check: checkDialect},
		{Name: "token", Env: "SMITH_TOKEN", Secret: true, Help: "bearer token sent to the upstream"},
		{Name: "state_dir", Env: "SMITH_STATE_DIR", Help: "where smith keeps journals and dialog indexes"},
		{Name: "idle_timeout", Env: "SMITH_IDLE_TIMEOUT", Default: "60s", Help: "end a turn after this long without a byte from the upstream", check: checkDuration},
		{Name: "progress_timeout", Env: "SMITH_PROGRESS_TIMEOUT", Default: "5m", Help: "end a turn after this long without an event (keep-alives and stray bytes are not progress); negative: never", check: checkDuration},
		{Name: "turn_limit", Env: "SMITH_TURN_LIMIT", Default: "1h", Help: "end a turn that runs longer than this; negative: never", check: checkDuration},
		{Name: "max_event_size", Env: "SMITH_MAX_EVENT_SIZE", Default: "16777216", Help: "largest accepted SSE event, in bytes", check: checkPositiveInt},
		{Name: "max_message", Env: "SMITH_MAX_MESSAGE", Default: "5000", Help: "longest accepted chat message, in characters", check: checkPositiveInt},
		{Name: "max_turns", Env: "SMITH_MAX_TURNS", Default: "3", Help: "concurrent turns per client", check: checkPositiveInt},
		{Name: "auto_apply", Env: "SMITH_AUTO_APPLY", Default: "false", Help: "apply change proposals as they arrive", check: checkBool},
	}
}

// Value is a resolved setting.
type Value struct {
	Key    Key
	Value  string
	Source Source
	Origin string // the file, variable or flag it came from
}

// Display returns the value as `smith config` prints it: secrets masked.
func (v Value) Display() string {
	if v.Key.Secret && v.Value != "" {
		return "******** (set)"
	}
	if v.Key.Name == "upstream" {
		// A password in the URL is a secret too (url.URL.Redacted).
		if u, err := url.Parse(v.Value); err == nil && u.User != nil {
			return u.Redacted()
		}
	}
	return v.Value
}

// Settings is the resolved configuration.
type Settings struct {
	Workspace string
	values    map[string]Value
}

// Get returns the resolved value of key (empty when unset).
func (s *Settings) Get(key string) string { return s.values[key].Value }

// Lookup returns the resolved value of key with its source.
func (s *Settings) Lookup(key string) (Value, bool) {
	v, ok := s.values[key]
	return v, ok
}

// Values lists every setting in display order.
func (s *Settings) Values() []Value {
	out := make([]Value, 0, len(s.values))
	for _, k := range Keys() {
		out = append(out, s.values[k.Name])
	}
	return out
}

// Duration returns a duration setting (validated at Load).
func (s *Settings) Duration(key string) time.Duration {
	d, _ := time.ParseDuration(s.Get(key))
	return d
}

// Int returns an integer setting (validated at Load).
func (s *Settings) Int(key string) int {
	n, _ := strconv.Atoi(s.Get(key))
	return n
}

// Bool returns a boolean setting (validated at Load).
func (s *Settings) Bool(key string) bool {
	b, _ := strconv.ParseBool(s.Get(key))
	return b
}

// Options says where Load looks.
type Options struct {
	Workspace string            // workspace root (see FindWorkspace)
	Flags     map[string]string // key → value given on the command line
	Getenv    func(string) string
	// UserFile is the user's config file; empty means UserConfigPath().
	UserFile string
	// Discover finds a running upstream of the workspace (for example
	// protocol.Discover); nil skips discovery.
	Discover func(workspace string) (string, error)
}

// Load resolves every setting. A config file that cannot be parsed, an
// unknown key in it or an invalid value anywhere is an error that names
// where it came from.
func Load(o Options) (*Settings, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	userFile := o.UserFile
	if userFile == "" {
		userFile = UserConfigPath(getenv)
	}
	var wsFile map[string]string
	var err error
	if o.Workspace != "" {
		if wsFile, err = readFile(filepath.Join(o.Workspace, WorkspaceFile)); err != nil {
			return nil, err
		}
	}
	var userVals map[string]string
	if userFile != "" {
		if userVals, err = readFile(userFile); err != nil {
			return nil, err
		}
	}
	s := &Settings{Workspace: o.Workspace, values: map[string]Value{}}
	for _, k := range Keys() {
		v := Value{Key: k, Value: k.Default, Source: SourceDefault}
		switch {
		case has(o.Flags, k.Name):
			v.Value, v.Source, v.Origin = o.Flags[k.Name], SourceFlag, "--"+strings.ReplaceAll(k.Name, "_", "-")
		case getenv(k.Env) != "":
			v.Value, v.Source, v.Origin = getenv(k.Env), SourceEnv, k.Env
		case has(wsFile, k.Name):
			v.Value, v.Source, v.Origin = wsFile[k.Name], SourceWorkspace, filepath.Join(o.Workspace, WorkspaceFile)
		case has(userVals, k.Name):
			v.Value, v.Source, v.Origin = userVals[k.Name], SourceUser, userFile
		}
		if k.check != nil && v.Value != "" {
			if err := k.check(v.Value); err != nil {
				return nil, fmt.Errorf("%s (from %s): %w", k.Name, describe(v), err)
			}
		}
		s.values[k.Name] = v
	}
	if up := s.values["upstream"]; up.Value == "" {
		up.Value, up.Source, up.Origin = DefaultUpstream, SourceDefault, ""
		if o.Discover != nil && o.Workspace != "" {
			if url, err := o.Discover(o.Workspace); err == nil && url != "" {
				up.Value, up.Source, up.Origin = url, SourceDiscovery, filepath.Join(o.Workspace, ".agentsmithy", "status.json")
			}
		}
		s.values["upstream"] = up
	}
	if sd := s.values["state_dir"]; sd.Value == "" {
		sd.Value, sd.Source = DefaultStateDir(getenv), SourceDefault
		s.values["state_dir"] = sd
	}
	return s, nil
}

func describe(v Value) string {
	if v.Origin != "" {
		return string(v.Source) + " " + v.Origin
	}
	return string(v.Source)
}

func has(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// readFile reads a TOML config file into key → string. A missing file is
// not an error.
func readFile(path string) (map[string]string, error) {
	raw := map[string]any{}
	md, err := toml.DecodeFile(path, &raw)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w (fix the file or remove it)", path, err)
	}
	known := map[string]bool{}
	for _, k := range Keys() {
		known[k.Name] = true
	}
	out := map[string]string{}
	var unknown []string
	for _, key := range md.Keys() {
		name := key.String()
		if !known[name] {
			unknown = append(unknown, name)
			continue
		}
		out[name] = fmt.Sprint(raw[name])
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		names := make([]string, 0, len(Keys()))
		for _, k := range Keys() {
			names = append(names, k.Name)
		}
		return nil, fmt.Errorf("config file %s: unknown key %s (known keys: %s)", path, strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	return out, nil
}

// UserConfigPath is the user's config file: $XDG_CONFIG_HOME/smith/config.toml,
// else ~/.config/smith/config.toml.
func UserConfigPath(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "smith", "config.toml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "smith", "config.toml")
	}
	return ""
}

// DefaultStateDir is $XDG_STATE_HOME/smith, else ~/.local/state/smith.
func DefaultStateDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "smith")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "smith")
	}
	return filepath.Join(os.TempDir(), "smith-state")
}

// FindWorkspace returns the workspace root for dir: the top level of the
// git repository containing it, or dir itself.
func FindWorkspace(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs, nil
		}
		d = parent
	}
}

func checkURL(s string) error {
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return fmt.Errorf("%q is not an http:// or https:// URL", s)
	}
	return nil
}

func checkDialect(s string) error {
	_, err := protocol.ParseDialect(s)
	return err
}

func checkDuration(s string) error {
	if _, err := time.ParseDuration(s); err != nil {
		return fmt.Errorf("%q is not a duration such as 60s or 2m", s)
	}
	return nil
}

func checkPositiveInt(s string) error {
	if n, err := strconv.Atoi(s); err != nil || n <= 0 {
		return fmt.Errorf("%q is not a positive whole number", s)
	}
	return nil
}

func checkBool(s string) error {
	if _, err := strconv.ParseBool(s); err != nil {
		return fmt.Errorf("%q is not true or false", s)
	}
	return nil
}
