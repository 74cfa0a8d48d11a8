// Package daemon is smith's engine: dialogs and single-flight turns, change
// proposals and their life cycle, apply through the editor or atomically on
// disk, a file watcher that re-validates pending changes, and an undo
// journal. It speaks no JSON-RPC and prints nothing: fronts (editor/ and
// cmd/smith) call its Go API and provide editor services through interfaces
// it defines.
package daemon
