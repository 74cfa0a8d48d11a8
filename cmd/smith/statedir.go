package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/smith-dev/smith/config"
	"github.com/smith-dev/smith/daemon"
)

// usableStateDir makes the workspace's state folder dir (inside the
// state_dir setting) as the engine would, so that a setting naming a path
// that cannot be a folder (a file, a folder under a file, a place the user
// may not write) is a usage error that names the path, where the setting
// came from and what to do, rather than a failure deep in the engine.
func usableStateDir(set *config.Settings, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return stateDirUnusable(set, err, "")
	}
	return nil
}

// fromInitOptions is the origin of a state_dir that an editor's
// initializationOptions gave smith serve.
const fromInitOptions = "initializationOptions.stateDir"

// stateDirUnusable is the usage error of a state folder that failed with
// err: the path, where the setting came from (origin, when not "", names
// a layer config.Settings does not know: initializationOptions), and the
// fix.
func stateDirUnusable(set *config.Settings, err error, origin string) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	v, _ := set.Lookup("state_dir")
	from := "the default (XDG_STATE_HOME, else ~/.local/state)"
	fix := "set XDG_STATE_HOME or --state-dir to a directory you can write"
	switch {
	case origin != "":
		from, fix = origin, "change the editor's smith stateDir setting (sent as "+origin+") to a directory smith can create and write, or remove it"
	case v.Source == config.SourceFlag:
		from, fix = "--state-dir", "give --state-dir a directory smith can create and write, or leave it out to use the default"
	case v.Source == config.SourceEnv:
		from, fix = v.Origin, "set "+v.Origin+" to a directory smith can create and write, or unset it"
	case v.Source == config.SourceWorkspace, v.Source == config.SourceUser:
		from, fix = "state_dir in "+v.Origin, "change state_dir there to a directory smith can create and write"
	}
	return usageErrorf("state directory %s (from %s) cannot be used: %v; %s", v.Value, from, err, fix)
}

// stateDirAtStart checks the state folder smith serve or smith acp will
// use, as far as the settings read at start-up (set: flags, SMITH_*
// variables, the user's config file, and the workspace's .smith.toml when
// --workspace names it) tell, before any editor message: a folder that
// cannot be made, or that smith cannot write in, is found now rather than
// when an editor connects. With workspace ("" when not known yet) the
// workspace's own folder is checked, else the state_dir root.
//
// The probe writes and removes one file: an existing read-only folder
// passes MkdirAll, and the engine would only fail at its lock file.
func stateDirAtStart(set *config.Settings, workspace string) error {
	dir := set.Get("state_dir")
	if workspace != "" {
		cfg := engineConfig(set)
		cfg.Workspace = workspace
		d, err := daemon.StateDirOf(cfg)
		if err != nil {
			return stateDirUnusable(set, err, "")
		}
		dir = d
	}
	if err := usableStateDir(set, dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".smith-probe-*")
	if err != nil {
		// The probe's own name is noise.
		return stateDirUnusable(set, fmt.Errorf("cannot create files in %s: %w", dir, pathErrText(err)), "")
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return stateDirUnusable(set, err, "")
	}
	return nil
}
