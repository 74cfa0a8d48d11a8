//go:build !floor_only || floor_toml

package main

import (
	"os"

	"github.com/BurntSushi/toml"
)

func init() { uses = append(uses, useTOML) }

// useTOML decodes a configuration file.
func useTOML() {
	var conf map[string]any
	if _, err := toml.DecodeFile(os.Args[1], &conf); err != nil {
		os.Stderr.WriteString(err.Error())
	}
}
