package upstream

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// dialog is one AgentSmithy dialog with its history and versioning state.
// Dialogs live in memory: a restarted server starts with none (the
// checkpoint files on disk stay).
type dialog struct {
	ID         string
	Title      *string
	Created    time.Time
	Updated    time.Time
	Session    int    // active session number: session_N
	Approved   string // checkpoint of the approved state ("main")
	ApprovedAt *time.Time
	Initial    string
	// Checkpoints lists every checkpoint of the dialog, oldest first.
	Checkpoints  []checkpointInfo
	SinceApprove int // checkpoints taken since the last approve or reset
	Messages     []storedMessage
}

type checkpointInfo struct {
	CommitID string `json:"commit_id"`
	Message  string `json:"message"`
}

// storedMessage is one message of the dialog's history: a user message or
// one AI message (one LLM call) with its reasoning, tool calls and edits.
type storedMessage struct {
	User       bool
	Content    string
	Checkpoint string
	Session    string
	Reasoning  string
	ToolCalls  []historyEvent
	FileEdits  []historyEvent
}

func (m *storedMessage) visible() bool { return m.User || m.Content != "" }

func newDialogID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

func sessionName(n int) string { return "session_" + strconv.Itoa(n) }

// newDialogLocked creates a dialog with session_1 and an initial
// checkpoint of the workspace. s.mu must be held.
func (s *Server) newDialogLocked(id string, title *string) (*dialog, error) {
	if id == "" {
		id = newDialogID()
	}
	now := time.Now()
	d := &dialog{ID: id, Title: title, Created: now, Updated: now, Session: 1}
	cp, err := s.store.snapshot("", "Initial checkpoint of dialog "+id)
	if err != nil {
		return nil, err
	}
	d.Initial, d.Approved = cp, cp
	d.Checkpoints = []checkpointInfo{{cp, "Initial checkpoint"}}
	s.dialogs[id] = d
	return d, nil
}

// checkpointLocked snapshots the workspace onto the dialog's session.
func (s *Server) checkpointLocked(d *dialog, message string) (string, error) {
	parent := d.Checkpoints[len(d.Checkpoints)-1].CommitID
	id, err := s.store.snapshot(parent, message)
	if err != nil {
		return "", err
	}
	d.Checkpoints = append(d.Checkpoints, checkpointInfo{id, message})
	d.SinceApprove++
	return id, nil
}

// resolveDialogLocked is the chat route's rule: the request's id (used
// as-is, created if unknown), else the current dialog, else a new one.
func (s *Server) resolveDialogLocked(id string) (*dialog, error) {
	if id == "" {
		id = s.current
	}
	if d := s.dialogs[id]; d != nil {
		return d, nil
	}
	d, err := s.newDialogLocked(id, nil)
	if err != nil {
		return nil, err
	}
	if s.current == "" {
		s.current = d.ID
	}
	return d, nil
}

type dialogMeta struct {
	ID        string  `json:"id"`
	Title     *string `json:"title,omitempty"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

func (d *dialog) meta() dialogMeta {
	return dialogMeta{d.ID, d.Title, isoTime(d.Created), isoTime(d.Updated)}
}

// validationError is one item of FastAPI's 422 detail list.
type validationError struct {
	Type  string            `json:"type"`
	Loc   []any             `json:"loc"`
	Msg   string            `json:"msg"`
	Input any               `json:"input"`
	Ctx   map[string]string `json:"ctx,omitempty"`
}

func write422(w http.ResponseWriter, errs ...validationError) {
	writeJSON(w, http.StatusUnprocessableEntity, detailBody{errs})
}

func intParam(r *http.Request, name string, def int) (int, *validationError) {
	v := r.URL.Query().Get(name)
	if !r.URL.Query().Has(name) {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, &validationError{Type: "int_parsing", Loc: []any{"query", name}, Msg: "Input should be a valid integer, unable to parse string as an integer", Input: v}
	}
	return n, nil
}

func literalParam(r *http.Request, name, def string, allowed ...string) (string, *validationError) {
	if !r.URL.Query().Has(name) {
		return def, nil
	}
	v := r.URL.Query().Get(name)
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	expected := "'" + strings.Join(allowed, "' or '") + "'"
	return "", &validationError{Type: "literal_error", Loc: []any{"query", name}, Msg: "Input should be " + expected, Input: v, Ctx: map[string]string{"expected": expected}}
}

// decodeBody reads an optional JSON object body; a malformed one is a 422
// like pydantic's json_invalid.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, detail("Could not read the request body: "+err.Error()))
		return false
	}
	if strings.TrimSpace(string(data)) == "" {
		return true
	}
	if err := json.Unmarshal(data, v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			write422(w, validationError{Type: "model_attributes_type", Loc: []any{"body", ute.Field}, Msg: "Input should be a valid " + ute.Type.Kind().String(), Input: ute.Value})
			return false
		}
		write422(w, validationError{Type: "json_invalid", Loc: []any{"body", 0}, Msg: "JSON decode error", Input: map[string]any{}, Ctx: map[string]string{"error": err.Error()}})
		return false
	}
	return true
}

func (s *Server) handleListDialogs(w http.ResponseWriter, r *http.Request) {
	var errs []validationError
	sortBy, e1 := literalParam(r, "sort", "updated_at", "updated_at", "created_at")
	order, e2 := literalParam(r, "order", "desc", "desc", "asc")
	limit, e3 := intParam(r, "limit", 50)
	offset, e4 := intParam(r, "offset", 0)
	for _, e := range []*validationError{e1, e2, e3, e4} {
		if e != nil {
			errs = append(errs, *e)
		}
	}
	if len(errs) > 0 {
		write422(w, errs...)
		return
	}
	s.mu.Lock()
	list := make([]*dialog, 0, len(s.dialogs))
	for _, d := range s.dialogs {
		list = append(list, d)
	}
	current := s.current
	s.mu.Unlock()
	key := func(d *dialog) time.Time {
		if sortBy == "created_at" {
			return d.Created
		}
		return d.Updated
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := key(list[i]), key(list[j])
		if a.Equal(b) {
			return list[i].ID < list[j].ID
		}
		if order == "asc" {
			return a.Before(b)
		}
		return a.After(b)
	})
	offset = max(offset, 0)
	list = list[min(offset, len(list)):]
	list = list[:min(max(limit, 0), len(list))]
	out := struct {
		CurrentDialogID string       `json:"current_dialog_id,omitempty"`
		Dialogs         []dialogMeta `json:"dialogs"`
	}{CurrentDialogID: current, Dialogs: []dialogMeta{}}
	for _, d := range list {
		out.Dialogs = append(out.Dialogs, d.meta())
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleCreateDialog(w http.ResponseWriter, r *http.Request) {
	body := struct {
		Title      *string `json:"title"`
		SetCurrent *bool   `json:"set_current"`
	}{}
	if !decodeBody(w, r, &body) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.newDialogLocked("", body.Title)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, detail(err.Error()))
		return
	}
	if body.SetCurrent == nil || *body.SetCurrent {
		s.current = d.ID
	}
	writeJSON(w, http.StatusOK, struct {
		ID string `json:"id"`
	}{d.ID})
}

func (s *Server) handleGetCurrent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dialogs[s.current]
	if d == nil {
		writeJSON(w, http.StatusOK, struct{}{})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		ID   string     `json:"id"`
		Meta dialogMeta `json:"meta"`
	}{d.ID, d.meta()})
}

func (s *Server) handleSetCurrent(w http.ResponseWriter, r *http.Request) {
	if !r.URL.Query().Has("id") {
		write422(w, validationError{Type: "missing", Loc: []any{"query", "id"}, Msg: "Field required", Input: nil})
		return
	}
	id := r.URL.Query().Get("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dialogs[id] == nil {
		// The real server raises ValueError here, which FastAPI turns into
		// a plain-text 500.
		internalError(w)
		return
	}
	s.current = id
	writeJSON(w, http.StatusOK, okBody{true})
}

type okBody struct {
	OK bool `json:"ok"`
}

func (s *Server) handleGetDialog(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dialogs[r.PathValue("id")]
	if d == nil {
		writeJSON(w, http.StatusNotFound, detail("Dialog not found"))
		return
	}
	writeJSON(w, http.StatusOK, d.meta())
}

func (s *Server) handleRenameDialog(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title *string `json:"title"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Title == nil {
		writeJSON(w, http.StatusOK, okBody{true})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dialogs[r.PathValue("id")]
	if d == nil {
		var err error
		if d, err = s.newDialogLocked(r.PathValue("id"), nil); err != nil {
			writeJSON(w, http.StatusInternalServerError, detail(err.Error()))
			return
		}
	}
	d.Title = body.Title
	d.Updated = time.Now()
	writeJSON(w, http.StatusOK, okBody{true})
}

func (s *Server) handleDeleteDialog(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	delete(s.dialogs, id)
	if s.current == id {
		s.current = ""
		var latest *dialog
		for _, d := range s.dialogs {
			if latest == nil || d.Updated.After(latest.Updated) || d.Updated.Equal(latest.Updated) && d.ID < latest.ID {
				latest = d
			}
		}
		if latest != nil {
			s.current = latest.ID
		}
	}
	writeJSON(w, http.StatusOK, okBody{true})
}

// historyEvent is one item of the history endpoint (field order type, idx,
// content, model_name, id, name, args, file, diff, checkpoint, session;
// nulls omitted).
type historyEvent struct {
	Type       string  `json:"type"`
	Idx        *int    `json:"idx,omitempty"`
	Content    *string `json:"content,omitempty"`
	ModelName  string  `json:"model_name,omitempty"`
	ID         string  `json:"id,omitempty"`
	Name       string  `json:"name,omitempty"`
	Args       any     `json:"args,omitempty"`
	File       string  `json:"file,omitempty"`
	Diff       *string `json:"diff,omitempty"`
	Checkpoint string  `json:"checkpoint,omitempty"`
	Session    string  `json:"session,omitempty"`
}

// modelName is reported on reasoning blocks, like the real server's
// model_name.
const modelName = "smith-demo"

type historyPage struct {
	DialogID    string         `json:"dialog_id"`
	Events      []historyEvent `json:"events"`
	TotalEvents int            `json:"total_events"`
	HasMore     bool           `json:"has_more"`
	FirstIdx    int            `json:"first_idx"`
	LastIdx     int            `json:"last_idx"`
}

func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	limit, e1 := intParam(r, "limit", 20)
	before, e2 := intParam(r, "before", -1)
	if e1 != nil || e2 != nil {
		var errs []validationError
		for _, e := range []*validationError{e1, e2} {
			if e != nil {
				errs = append(errs, *e)
			}
		}
		write422(w, errs...)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	d := s.dialogs[id]
	if d == nil {
		writeJSON(w, http.StatusNotFound, detail(fmt.Sprintf("Dialog %s not found", id)))
		return
	}
	writeJSON(w, http.StatusOK, d.history(limit, before))
}

// history pages over visible messages (user and non-empty AI messages);
// before < 0 means the latest page.
func (d *dialog) history(limit, before int) historyPage {
	page := historyPage{DialogID: d.ID, Events: []historyEvent{}}
	var pos []int // positions of visible messages in d.Messages
	for i := range d.Messages {
		m := &d.Messages[i]
		if m.visible() {
			pos = append(pos, i)
			page.TotalEvents++
		}
		if m.Reasoning != "" {
			page.TotalEvents++
		}
		page.TotalEvents += len(m.ToolCalls) + len(m.FileEdits)
	}
	total := len(pos)
	limit = max(limit, 0)
	end := total
	if before >= 0 {
		end = min(before, total)
	}
	start := max(0, end-limit)
	page.HasMore = start > 0
	if start >= end && before >= 0 {
		return page
	}
	// A page owns the messages after the previous page's last visible one,
	// up to its own last visible one; the latest page also owns the
	// trailing empty AI messages (a final tool-only turn).
	from := 0
	if start > 0 {
		from = pos[start-1] + 1
	}
	to := len(d.Messages)
	if before >= 0 || total == 0 {
		if end > 0 {
			to = pos[end-1] + 1
		}
	}
	idxOf := map[int]int{}
	for i, p := range pos {
		idxOf[p] = i
	}
	first := true
	for i := from; i < to; i++ {
		m := &d.Messages[i]
		if m.Reasoning != "" {
			c := m.Reasoning
			page.Events = append(page.Events, historyEvent{Type: "reasoning", Content: &c, ModelName: modelName})
		}
		if idx, ok := idxOf[i]; ok {
			c := m.Content
			ev := historyEvent{Type: "chat", Idx: &idx, Content: &c}
			if m.User {
				ev.Type, ev.Checkpoint, ev.Session = "user", m.Checkpoint, m.Session
			}
			page.Events = append(page.Events, ev)
			if first {
				page.FirstIdx, first = idx, false
			}
			page.LastIdx = idx
		}
		page.Events = append(page.Events, m.ToolCalls...)
		page.Events = append(page.Events, m.FileEdits...)
	}
	return page
}

// dialogFor finds a dialog for the versioning endpoints or answers 404.
func (s *Server) dialogFor(w http.ResponseWriter, r *http.Request) *dialog {
	id := r.PathValue("id")
	d := s.dialogs[id]
	if d == nil {
		writeJSON(w, http.StatusNotFound, detail(fmt.Sprintf("Dialog %s not found", id)))
	}
	return d
}

func (s *Server) handleCheckpoints(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dialogFor(w, r)
	if d == nil {
		return
	}
	writeJSON(w, http.StatusOK, struct {
		DialogID          string           `json:"dialog_id"`
		Checkpoints       []checkpointInfo `json:"checkpoints"`
		InitialCheckpoint *string          `json:"initial_checkpoint"`
	}{d.ID, d.Checkpoints, &d.Initial})
}

type sessionStatus struct {
	ActiveSession  *string       `json:"active_session"`
	SessionRef     *string       `json:"session_ref"`
	HasUnapproved  bool          `json:"has_unapproved"`
	LastApprovedAt *string       `json:"last_approved_at"`
	ChangedFiles   []changedFile `json:"changed_files"`
}

// unapprovedLocked finds the request's dialog and the files changed since
// its last approval, answering 404/500 itself when it cannot (ok false).
// The caller holds s.mu.
func (s *Server) unapprovedLocked(w http.ResponseWriter, r *http.Request) (d *dialog, changes []changedFile, ok bool) {
	if d = s.dialogFor(w, r); d == nil {
		return nil, nil, false
	}
	changes, err := s.store.changesSince(d.Approved)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, detail(err.Error()))
		return nil, nil, false
	}
	return d, changes, true
}

func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, changes, ok := s.unapprovedLocked(w, r)
	if !ok {
		return
	}
	st := sessionStatus{ChangedFiles: changes, HasUnapproved: len(changes) > 0}
	if d.ApprovedAt != nil {
		t := isoTime(*d.ApprovedAt)
		st.LastApprovedAt = &t
	}
	if st.HasUnapproved {
		name := sessionName(d.Session)
		ref := "refs/heads/" + name
		st.ActiveSession, st.SessionRef = &name, &ref
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleRestore(w http.ResponseWriter, r *http.Request) {
	var body struct {
		CheckpointID *string `json:"checkpoint_id"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.CheckpointID == nil {
		write422(w, validationError{Type: "missing", Loc: []any{"body", "checkpoint_id"}, Msg: "Field required", Input: map[string]any{}})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dialogFor(w, r)
	if d == nil {
		return
	}
	target := *body.CheckpointID
	known := false
	for _, c := range d.Checkpoints {
		known = known || c.CommitID == target
	}
	if !known {
		writeJSON(w, http.StatusNotFound, detail(fmt.Sprintf("Checkpoint %s not found in dialog %s", target, d.ID)))
		return
	}
	if err := s.store.restore(target); err != nil {
		writeJSON(w, http.StatusInternalServerError, detail(err.Error()))
		return
	}
	cp, err := s.checkpointLocked(d, "Restore to "+target)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, detail(err.Error()))
		return
	}
	d.Updated = time.Now()
	writeJSON(w, http.StatusOK, struct {
		RestoredTo    string `json:"restored_to"`
		NewCheckpoint string `json:"new_checkpoint"`
	}{target, cp})
}

func (s *Server) handleApprove(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Message *string `json:"message"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, changes, ok := s.unapprovedLocked(w, r)
	if !ok {
		return
	}
	approved, commits := d.Approved, 0
	if len(changes) > 0 {
		msg := "Approve " + sessionName(d.Session)
		if body.Message != nil && *body.Message != "" {
			msg = *body.Message
		}
		var err error
		if approved, err = s.checkpointLocked(d, msg); err != nil {
			writeJSON(w, http.StatusInternalServerError, detail(err.Error()))
			return
		}
		commits = d.SinceApprove
		now := time.Now()
		d.ApprovedAt = &now
	}
	d.Approved = approved
	d.Session++
	d.SinceApprove = 0
	writeJSON(w, http.StatusOK, struct {
		ApprovedCommit  string `json:"approved_commit"`
		NewSession      string `json:"new_session"`
		CommitsApproved int    `json:"commits_approved"`
	}{approved, sessionName(d.Session), commits})
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, changes, ok := s.unapprovedLocked(w, r)
	if !ok {
		return
	}
	var pre *string
	if len(changes) > 0 {
		cp, err := s.checkpointLocked(d, "Auto-checkpoint before reset")
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, detail(err.Error()))
			return
		}
		pre = &cp
	}
	if err := s.store.restore(d.Approved); err != nil {
		writeJSON(w, http.StatusInternalServerError, detail(err.Error()))
		return
	}
	d.Session++
	d.SinceApprove = 0
	writeJSON(w, http.StatusOK, struct {
		ResetTo            string  `json:"reset_to"`
		NewSession         string  `json:"new_session"`
		PreResetCheckpoint *string `json:"pre_reset_checkpoint"`
	}{d.Approved, sessionName(d.Session), pre})
}
