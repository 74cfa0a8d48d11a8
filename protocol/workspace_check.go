package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
)

// ErrWrongWorkspace: the upstream smith found by itself (discovery, or the
// default address) does not serve this workspace, so smith sends it
// nothing. See ClientConfig.Workspace.
var ErrWrongWorkspace = errors.New("the upstream does not serve this workspace")

// WrongWorkspaceError says which server answered, what smith knows of the
// workspace it serves, and how to reach the right one.
type WrongWorkspaceError struct {
	URL             string // the server's base URL
	Workspace       string // this workspace
	ServerWorkspace string // what the server's /health reports, "" when it reports none
	PID             int    // the server's pid (its /health), 0 when unknown
	Reason          string // why smith concluded it serves another workspace
}

func (e *WrongWorkspaceError) Error() string {
	who := e.URL
	if e.PID > 0 {
		who = fmt.Sprintf("%s (pid %d)", e.URL, e.PID)
	}
	return fmt.Sprintf("smith sends nothing to the server at %s: %s, so it does not serve this workspace %s. "+
		"Start a server for this workspace (agentsmithy --workdir %s, or smith upstream --workspace %s), "+
		"or name the upstream yourself (--upstream URL, SMITH_UPSTREAM, or upstream in %s)",
		who, e.Reason, e.Workspace, e.Workspace, e.Workspace, filepath.Join(e.Workspace, ".smith.toml"))
}

// Is makes errors.Is(err, ErrWrongWorkspace) true.
func (e *WrongWorkspaceError) Is(target error) bool { return target == ErrWrongWorkspace }

// checkWorkspace makes sure, once, that the upstream serves
// ClientConfig.Workspace; until it has, every request fails. A failure is
// not remembered: the right server may be started meanwhile.
func (c *Client) checkWorkspace(ctx context.Context) error {
	if c.cfg.Workspace == "" {
		return nil
	}
	c.mu.Lock()
	ok := c.workspaceOK
	c.mu.Unlock()
	if ok {
		return nil
	}
	if err := c.servesWorkspace(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.workspaceOK = true
	c.mu.Unlock()
	return nil
}

// servesWorkspace asks GET /health. The embedded upstream (smith upstream)
// reports its workspace there; an AgentSmithy server does not, but it
// wrote the workspace's .agentsmithy/status.json, whose server_pid must
// then be the pid its /health reports.
func (c *Client) servesWorkspace(ctx context.Context) error {
	req, err := c.newRequest(ctx, http.MethodGet, "/health", nil, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.send(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	base := c.cfg.BaseURL
	wrong := &WrongWorkspaceError{URL: base, Workspace: c.cfg.Workspace}
	// Decoded as it comes (the content type is not checked, unlike
	// Health's): an AgentSmithy server that answers JSON as text/plain
	// still shows its pid.
	var h Health
	if res.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(&h) != nil {
		wrong.Reason = fmt.Sprintf("it does not answer GET /health like an AgentSmithy server (%s), and this workspace has no status file of a server", res.Status)
		return wrong
	}
	wrong.PID = h.PID
	if h.Workspace != "" {
		if sameDir(h.Workspace, c.cfg.Workspace) {
			return nil
		}
		wrong.ServerWorkspace = h.Workspace
		wrong.Reason = "it serves the workspace " + h.Workspace + " (its /health says so)"
		return wrong
	}
	path := StatusPath(c.cfg.Workspace)
	st, err := readStatus(path)
	var unread *fs.PathError
	if errors.As(err, &unread) {
		wrong.Reason = "this workspace has no " + filepath.Join(".agentsmithy", "status.json") + " (no server was started for it)"
		return wrong
	}
	if err != nil || st.ServerPID == nil {
		wrong.Reason = path + " names no server_pid"
		return wrong
	}
	if h.PID <= 0 || *st.ServerPID != h.PID {
		wrong.Reason = fmt.Sprintf("%s was written by process %d, not by this server", path, *st.ServerPID)
		return wrong
	}
	return nil
}

// sameDir reports whether a and b name the same directory (symbolic links
// resolved, so /tmp and /private/tmp are one).
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
