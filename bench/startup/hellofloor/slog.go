//go:build !floor_only || floor_slog

package main

import (
	"log/slog"
	"os"
)

func init() { uses = append(uses, useSlog) }

// useSlog logs to stderr as smith does.
func useSlog() {
	slog.New(slog.NewTextHandler(os.Stderr, nil)).Info("floor", "args", len(os.Args))
}
