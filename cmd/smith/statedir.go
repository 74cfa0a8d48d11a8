package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/smith-dev/smith/config"
)

// usableStateDir makes the workspace's state folder dir (inside the
// state_dir setting) as the engine would, so that a setting naming a path
// that cannot be a folder (a file, a folder under a file, a place the user
// may not write) is a usage error that names the path, where the setting
// came from and what to do, rather than a failure deep in the engine.
func usableStateDir(set *config.Settings, dir string) error {
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		return nil
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	v, _ := set.Lookup("state_dir")
	from := "the default (XDG_STATE_HOME, else ~/.local/state)"
	fix := "set XDG_STATE_HOME or --state-dir to a directory you can write"
	switch v.Source {
	case config.SourceFlag:
		from, fix = "--state-dir", "give --state-dir a directory smith can create and write, or leave it out to use the default"
	case config.SourceEnv:
		from, fix = v.Origin, "set "+v.Origin+" to a directory smith can create and write, or unset it"
	case config.SourceWorkspace, config.SourceUser:
		from, fix = "state_dir in "+v.Origin, "change state_dir there to a directory smith can create and write"
	}
	return usageErrorf("state directory %s (from %s) cannot be used: %v; %s", v.Value, from, err, fix)
}
