package upstream

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The real server keeps a shadow git repository per dialog (dulwich) and
// names checkpoints by 40-hex commit ids. The embedded server keeps the
// same observable behaviour without git: a checkpoint is a manifest of the
// workspace's files (.agentsmithy/checkpoints/<id>.json) whose blobs are
// stored by content hash (.agentsmithy/objects/<sha1>); its id is the SHA-1
// of the parent id, the message and the manifest, so ids are 40 hex digits,
// deterministic, and differ along a chain even when the files do not.

// checkpointStore snapshots and restores the files of a workspace.
// It is not safe for concurrent use; the Server serialises access.
type checkpointStore struct {
	ws *workspace
}

// manifest is one stored checkpoint.
type manifest struct {
	ID      string            `json:"id"`
	Parent  string            `json:"parent,omitempty"`
	Message string            `json:"message"`
	Files   map[string]string `json:"files"` // slash path -> blob SHA-1
}

// isCheckpointID reports whether id is a checkpoint id: 40 lowercase hex
// digits (a SHA-1). A plain check, not a package-level regexp, so that no
// smith command pays for compiling it at start-up.
func isCheckpointID(id string) bool {
	return len(id) == 40 && strings.Trim(id, "0123456789abcdef") == ""
}

// errNoCheckpoint is returned for an unknown or malformed checkpoint id.
var errNoCheckpoint = errors.New("checkpoint not found")

func (s *checkpointStore) dir(parts ...string) string {
	return filepath.Join(append([]string{s.ws.root, stateDir}, parts...)...)
}

// snapshot records the current files and returns the checkpoint id.
func (s *checkpointStore) snapshot(parent, message string) (string, error) {
	files, err := s.ws.files()
	if err != nil {
		return "", fmt.Errorf("checkpoint: list files: %w", err)
	}
	m := manifest{Parent: parent, Message: message, Files: map[string]string{}}
	h := sha1.New()
	fmt.Fprintf(h, "parent %s\nmessage %s\n", parent, message)
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(s.ws.root, filepath.FromSlash(rel)))
		if err != nil {
			continue // vanished or unreadable: not part of the snapshot
		}
		sum := sha1.Sum(b)
		blob := hex.EncodeToString(sum[:])
		if err := s.writeBlob(blob, b); err != nil {
			return "", err
		}
		m.Files[rel] = blob
		fmt.Fprintf(h, "%s %s\n", blob, rel)
	}
	m.ID = hex.EncodeToString(h.Sum(nil))
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := writeFileAtomic(s.dir("checkpoints", m.ID+".json"), data); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return m.ID, nil
}

func (s *checkpointStore) writeBlob(id string, b []byte) error {
	p := s.dir("objects", id)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := writeFileAtomic(p, b); err != nil {
		return fmt.Errorf("checkpoint: store blob: %w", err)
	}
	return nil
}

func (s *checkpointStore) load(id string) (*manifest, error) {
	if !isCheckpointID(id) {
		return nil, fmt.Errorf("%q: %w", id, errNoCheckpoint)
	}
	data, err := os.ReadFile(s.dir("checkpoints", id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", id, errNoCheckpoint)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("checkpoint %s is corrupt: %w", id, err)
	}
	return &m, nil
}

func (s *checkpointStore) blob(id string) ([]byte, error) {
	b, err := os.ReadFile(s.dir("objects", id))
	if err != nil {
		return nil, fmt.Errorf("checkpoint blob %s: %w", id, err)
	}
	return b, nil
}

// restore makes the workspace's files equal to the checkpoint: files of the
// checkpoint are written back, files created since are removed.
func (s *checkpointStore) restore(id string) error {
	m, err := s.load(id)
	if err != nil {
		return err
	}
	current, err := s.ws.files()
	if err != nil {
		return fmt.Errorf("restore %s: %w", id, err)
	}
	for _, rel := range current {
		if _, keep := m.Files[rel]; !keep {
			if err := os.Remove(filepath.Join(s.ws.root, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("restore %s: remove %s: %w", id, rel, err)
			}
		}
	}
	for _, rel := range sortedKeys(m.Files) {
		want, err := s.blob(m.Files[rel])
		if err != nil {
			return fmt.Errorf("restore %s: %w", id, err)
		}
		p := filepath.Join(s.ws.root, filepath.FromSlash(rel))
		if have, err := os.ReadFile(p); err == nil && string(have) == string(want) {
			continue
		}
		if err := writeFileAtomic(p, want); err != nil {
			return fmt.Errorf("restore %s: %w", id, err)
		}
	}
	return nil
}

// changedFile is one entry of the session endpoint's changed_files.
type changedFile struct {
	Path        string  `json:"path"`
	Status      string  `json:"status"`
	Additions   int     `json:"additions"`
	Deletions   int     `json:"deletions"`
	Diff        *string `json:"diff"`
	BaseContent *string `json:"base_content"`
	IsBinary    bool    `json:"is_binary"`
	IsTooLarge  bool    `json:"is_too_large"`
}

// changesSince compares the workspace with a checkpoint, sorted by path.
func (s *checkpointStore) changesSince(id string) ([]changedFile, error) {
	m, err := s.load(id)
	if err != nil {
		return nil, err
	}
	current, err := s.ws.files()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []changedFile{}
	for _, rel := range current {
		seen[rel] = true
		now, err := os.ReadFile(filepath.Join(s.ws.root, filepath.FromSlash(rel)))
		if err != nil {
			continue
		}
		blob, had := m.Files[rel]
		var base []byte
		if had {
			if base, err = s.blob(blob); err != nil {
				return nil, err
			}
			if string(base) == string(now) {
				continue
			}
		}
		status := "modified"
		if !had {
			status = "added"
		}
		out = append(out, fileChange(rel, status, base, now, had))
	}
	for _, rel := range sortedKeys(m.Files) {
		if seen[rel] {
			continue
		}
		base, err := s.blob(m.Files[rel])
		if err != nil {
			return nil, err
		}
		out = append(out, fileChange(rel, "deleted", base, nil, true))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func fileChange(rel, status string, base, now []byte, had bool) changedFile {
	c := changedFile{Path: rel, Status: status}
	if !textFile(base) || !textFile(now) {
		c.IsBinary = true
		return c
	}
	oldText, newText := string(base), string(now)
	d := standardDiff("a/"+rel, "b/"+rel, oldText, newText)
	// Count from the diff's lines, not its text: a removed "-- x" line
	// reads "--- x" in the text.
	for i, l := range unifiedDiffLines(splitKeepLF(oldText), splitKeepLF(newText), "", "") {
		switch {
		case i < 2: // the --- and +++ headers
		case strings.HasPrefix(l, "+"):
			c.Additions++
		case strings.HasPrefix(l, "-"):
			c.Deletions++
		}
	}
	c.Diff = &d
	if had {
		c.BaseContent = &oldText
	}
	return c
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeFileAtomic writes through a temporary file and a rename, creating
// parent folders, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
