package editor

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/smith-dev/smith/daemon"
)

// engines shares one daemon.Engine per workspace among the connections of
// a Server: two editors on the same project see the same dialogs, changes
// and undo journal. An engine is created by the first connection that
// initializes on its workspace and closed when the last one releases it.
type engines struct {
	mu   sync.Mutex
	open map[string]*sharedEngine
	log  *slog.Logger
	// newEngine is daemon.New outside tests.
	newEngine func(context.Context, daemon.Config) (*daemon.Engine, error)
	// onStart is Options.OnEngine (nil: none).
	onStart func(*daemon.Engine) func()
	// lent: the pool holds only Options.Engine and starts no engine.
	lent bool
}

type sharedEngine struct {
	eng  *daemon.Engine
	cfg  daemon.Config
	refs int
	stop func() // from onStart; nil when none
	// lent: the engine is Options.Engine, owned and closed by the
	// Server's creator; the pool keeps a reference of its own to it, so
	// that it never reaches its last release.
	lent bool
}

// lend makes eng, which the caller owns, the pool's only engine.
func (p *engines) lend(eng *daemon.Engine) {
	p.lent = true
	p.open[workspaceKey(eng.Workspace())] = &sharedEngine{eng: eng, cfg: daemon.Config{Workspace: eng.Workspace()}, refs: 1, lent: true}
}

func newEngines(log *slog.Logger) *engines {
	return &engines{open: map[string]*sharedEngine{}, log: log, newEngine: daemon.New}
}

// acquire returns the engine of cfg.Workspace, starting it when none runs,
// and the function that releases it. A later connection whose settings
// differ from the running engine's gets the running engine (one workspace,
// one journal); the difference is logged.
func (p *engines) acquire(ctx context.Context, cfg daemon.Config) (*daemon.Engine, func(), error) {
	key := workspaceKey(cfg.Workspace)
	p.mu.Lock()
	defer p.mu.Unlock()
	se, ok := p.open[key]
	switch {
	case !ok && p.lent:
		var only string
		for ws := range p.open {
			only = ws
		}
		return nil, nil, fmt.Errorf("this smith process holds only the engine of %s, not of %s: start smith for %s in a process of its own", only, cfg.Workspace, cfg.Workspace)
	case ok && se.lent:
		// The owner's engine, with the owner's settings: a connection's
		// own settings do not apply (one workspace, one engine).
	case ok:
		if se.cfg.Upstream != cfg.Upstream || se.cfg.Dialect != cfg.Dialect || se.cfg.StateDir != cfg.StateDir {
			p.log.Warn("workspace already served with other settings; sharing the running engine",
				"workspace", cfg.Workspace, "upstream", redactURL(se.cfg.Upstream), "requestedUpstream", redactURL(cfg.Upstream))
		}
	default:
		if cfg.Logger == nil {
			cfg.Logger = p.log
		}
		// The engine outlives the initialize request that starts it.
		eng, err := p.newEngine(context.WithoutCancel(ctx), cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("start the engine for %s: %w", cfg.Workspace, err)
		}
		se = &sharedEngine{eng: eng, cfg: cfg}
		if p.onStart != nil {
			se.stop = p.onStart(eng)
		}
		p.open[key] = se
	}
	se.refs++
	var once sync.Once
	return se.eng, func() { once.Do(func() { p.release(key, se) }) }, nil
}

// workspaceKey names a workspace however an editor spells it: two editors
// on "/w/" and on a symlink to "/w" share one engine.
func workspaceKey(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return filepath.Clean(dir)
}

func (p *engines) release(ws string, se *sharedEngine) {
	p.mu.Lock()
	se.refs--
	last := se.refs == 0
	if last {
		delete(p.open, ws)
	}
	p.mu.Unlock()
	if last {
		se.stopped()
		if err := se.eng.Close(); err != nil {
			p.log.Warn("closing the engine", "workspace", ws, "err", err)
		}
	}
}

// closeAll closes every engine still open (server shutdown).
func (p *engines) closeAll() {
	p.mu.Lock()
	open := p.open
	p.open = map[string]*sharedEngine{}
	p.mu.Unlock()
	for ws, se := range open {
		if se.lent {
			continue // its owner closes it
		}
		se.stopped()
		if err := se.eng.Close(); err != nil {
			p.log.Warn("closing the engine", "workspace", ws, "err", err)
		}
	}
}

// stopped runs the onStart hook's stop before the engine closes.
func (se *sharedEngine) stopped() {
	if se.stop != nil {
		se.stop()
	}
}
