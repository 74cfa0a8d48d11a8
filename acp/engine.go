package acp

import (
	"context"
	"errors"
	"fmt"

	"github.com/smith-dev/smith/daemon"
)

// Joined is the engine of the smith serve that holds the workspace, as
// reached through its serve.sock (the editor protocol): smith acp uses it
// when the workspace's state is locked by that serve (Options.Join). The
// holder's settings (upstream, dialect, limits) apply, and its writes go
// where it puts them: into its own editor's open buffers, else on disk.
type Joined interface {
	daemon.API
	// Close leaves the holder; its engine goes on.
	Close() error
	// Done is closed when the connection to the holder has ended (the
	// holder stopped: its editor left).
	Done() <-chan struct{}
}

// engine is smith's engine as smith acp uses it: one in this process
// (localEngine), or the one a smith serve holds (joinedEngine).
type engine interface {
	daemon.API
	Workspace() string
	// change returns one change as it is now.
	change(ctx context.Context, id string) (*daemon.Change, error)
	// close gives the engine back: closes it, or leaves the holder.
	close() error
	// gone reports whether the engine can no longer be used: the smith
	// serve that was joined has stopped.
	gone() bool
}

// localEngine is an engine of this process, with smith acp's front
// attached (peer: its fs/* routing, see fsEditor).
type localEngine struct {
	*daemon.Engine
	peer *daemon.Peer
}

func (l localEngine) change(_ context.Context, id string) (*daemon.Change, error) {
	return l.Engine.Change(id)
}

func (l localEngine) gone() bool { return false }

func (l localEngine) close() error {
	l.Engine.Detach(l.peer)
	return l.Engine.Close()
}

// joinedEngine is the engine of the smith serve holding the workspace.
type joinedEngine struct {
	Joined
	ws string
}

func (j joinedEngine) Workspace() string { return j.ws }

// change finds id among the holder's changes: the editor protocol has no
// call for one change, and smith acp asks only once per permission.
func (j joinedEngine) change(ctx context.Context, id string) (*daemon.Change, error) {
	cs, err := j.Changes(ctx, daemon.ChangeFilter{})
	if err != nil {
		return nil, err
	}
	for i := range cs {
		if cs[i].ID == id {
			return &cs[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %s", daemon.ErrUnknownChange, id)
}

func (j joinedEngine) close() error { return j.Joined.Close() }

func (j joinedEngine) gone() bool {
	select {
	case <-j.Done():
		return true
	default:
		return false
	}
}

// join reaches the smith serve that holds ws's engine (locked is
// daemon.New's error) through Options.Join; the error says what was tried
// and what to do when that fails too.
func (a *agent) join(ctx context.Context, cfg daemon.Config, locked error) (engine, error) {
	if a.o.Join == nil {
		return nil, fmt.Errorf("%w: another smith process holds the state of %s; stop it, then start a new session", locked, cfg.Workspace)
	}
	j, err := a.o.Join(ctx, cfg)
	if err != nil {
		return nil, errors.Join(locked, fmt.Errorf("%v; so smith acp cannot share its engine: finish or stop that process (a smith command holds it for a moment; an editor's smith serve until the editor closes the workspace), then start a new session", err))
	}
	return joinedEngine{Joined: j, ws: cfg.Workspace}, nil
}
