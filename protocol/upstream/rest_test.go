package upstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var hex40 = regexp.MustCompile(`^[0-9a-f]{40}$`)

// TestErrorStatuses pins the status and exact body of every error the API
// answers before a stream starts.
func TestErrorStatuses(t *testing.T) {
	_, base := newTestServer(t, Options{})
	for _, tc := range []struct {
		name, method, path string
		body               any
		code               int
		want               string
	}{
		{"no messages", "POST", "/api/chat", `{"stream": true}`, 422, `{"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required","input":{}}]}`},
		{"bad json", "POST", "/api/chat", `{"messages": [`, 422, ""},
		{"content not a string", "POST", "/api/chat", `{"messages": [{"role": "user", "content": 5}]}`, 422, `{"detail":[{"type":"string_type","loc":["body","messages",0,"content"],"msg":"Input should be a valid string","input":5}]}`},
		{"no user message", "POST", "/api/chat", `{"messages": [{"role": "assistant", "content": "hi"}]}`, 400, `{"detail":"No user message found"}`},
		{"unknown fault", "POST", "/api/chat", `{"messages": [{"role": "user", "content": "hi"}]}`, 400, ""},
		{"unknown dialog", "GET", "/api/dialogs/nope", nil, 404, `{"detail":"Dialog not found"}`},
		{"history of unknown dialog", "GET", "/api/dialogs/nope/history", nil, 404, `{"detail":"Dialog nope not found"}`},
		{"history bad limit", "GET", "/api/dialogs/nope/history?limit=x", nil, 422, `{"detail":[{"type":"int_parsing","loc":["query","limit"],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"x"}]}`},
		{"list bad sort", "GET", "/api/dialogs?sort=name", nil, 422, `{"detail":[{"type":"literal_error","loc":["query","sort"],"msg":"Input should be 'updated_at' or 'created_at'","input":"name","ctx":{"expected":"'updated_at' or 'created_at'"}}]}`},
		{"set current without id", "PATCH", "/api/dialogs/current", nil, 422, `{"detail":[{"type":"missing","loc":["query","id"],"msg":"Field required","input":null}]}`},
		{"set current unknown", "PATCH", "/api/dialogs/current?id=nope", nil, 500, `Internal Server Error`},
		{"session of unknown dialog", "GET", "/api/dialogs/nope/session", nil, 404, `{"detail":"Dialog nope not found"}`},
		{"unknown path", "GET", "/nope", nil, 404, `{"detail":"Not Found"}`},
		{"wrong method", "GET", "/api/chat", nil, 405, `{"detail":"Method Not Allowed"}`},
		{"wrong method on a dialog", "PUT", "/api/dialogs/x", nil, 405, `{"detail":"Method Not Allowed"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.name == "unknown fault" {
				hdr = []string{FaultHeader, "explode"}
			}
			res, body := do(t, tc.method, base+tc.path, tc.body, hdr...)
			if res.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.code, body)
			}
			if tc.want != "" && string(body) != tc.want {
				t.Errorf("body\n got %s\nwant %s", body, tc.want)
			}
		})
	}
}

type dialogList struct {
	CurrentDialogID string `json:"current_dialog_id"`
	Dialogs         []struct {
		ID        string  `json:"id"`
		Title     *string `json:"title"`
		CreatedAt string  `json:"created_at"`
		UpdatedAt string  `json:"updated_at"`
	} `json:"dialogs"`
}

func TestDialogsCRUD(t *testing.T) {
	_, base := newTestServer(t, Options{})
	if res, body := do(t, "GET", base+"/api/dialogs/current", nil); res.StatusCode != 200 || string(body) != `{}` {
		t.Fatalf("current with no dialog: %d %s", res.StatusCode, body)
	}
	var ids []string
	for i := range 3 {
		res, body := do(t, "POST", base+"/api/dialogs", map[string]any{"title": fmt.Sprintf("d%d", i)})
		if res.StatusCode != 200 {
			t.Fatalf("create: %d %s", res.StatusCode, body)
		}
		created := decode[map[string]string](t, body)
		if len(created) != 1 || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(created["id"]) {
			t.Fatalf("create answered %s, want only a 32-hex id", body)
		}
		ids = append(ids, created["id"])
	}
	// set_current false keeps the current dialog.
	_, body := do(t, "POST", base+"/api/dialogs", map[string]any{"set_current": false})
	hidden := decode[map[string]string](t, body)["id"]

	_, body = do(t, "GET", base+"/api/dialogs", nil)
	list := decode[dialogList](t, body)
	if list.CurrentDialogID != ids[2] || len(list.Dialogs) != 4 {
		t.Fatalf("list = %s", body)
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`).MatchString(list.Dialogs[0].CreatedAt) {
		t.Errorf("timestamp %q is not ISO-8601 with microseconds and Z", list.Dialogs[0].CreatedAt)
	}
	if !strings.Contains(string(body), `{"id":"`+hidden+`","created_at"`) {
		t.Errorf("a dialog without title must omit the key: %s", body)
	}
	_, body = do(t, "GET", base+"/api/dialogs?sort=created_at&order=asc&limit=2&offset=1", nil)
	page := decode[dialogList](t, body)
	if got := []string{page.Dialogs[0].ID, page.Dialogs[1].ID}; !cmp.Equal(got, []string{ids[1], ids[2]}) {
		t.Errorf("asc by created_at, offset 1, limit 2 = %v, want %v", got, ids[1:3])
	}

	if res, body := do(t, "PATCH", base+"/api/dialogs/"+ids[0], map[string]any{"title": "renamed"}); res.StatusCode != 200 || string(body) != `{"ok":true}` {
		t.Fatalf("rename: %d %s", res.StatusCode, body)
	}
	_, body = do(t, "GET", base+"/api/dialogs/"+ids[0], nil)
	if m := decode[map[string]any](t, body); m["title"] != "renamed" || m["id"] != ids[0] {
		t.Errorf("get after rename = %s", body)
	}
	if res, body := do(t, "PATCH", base+"/api/dialogs/current?id="+ids[0], nil); res.StatusCode != 200 || string(body) != `{"ok":true}` {
		t.Fatalf("set current: %d %s", res.StatusCode, body)
	}
	_, body = do(t, "GET", base+"/api/dialogs/current", nil)
	if cur := decode[map[string]any](t, body); cur["id"] != ids[0] || cur["meta"].(map[string]any)["title"] != "renamed" {
		t.Errorf("current = %s", body)
	}
	// Deleting the current dialog makes the most recently updated one current.
	for range 2 {
		if res, body := do(t, "DELETE", base+"/api/dialogs/"+ids[0], nil); res.StatusCode != 200 || string(body) != `{"ok":true}` {
			t.Fatalf("delete (idempotent): %d %s", res.StatusCode, body)
		}
	}
	_, body = do(t, "GET", base+"/api/dialogs/current", nil)
	if cur := decode[map[string]any](t, body); cur["id"] == ids[0] || cur["id"] == nil {
		t.Errorf("current after delete = %s", body)
	}
	if res, _ := do(t, "GET", base+"/api/dialogs/"+ids[0], nil); res.StatusCode != 404 {
		t.Errorf("deleted dialog answers %d", res.StatusCode)
	}
}

type history struct {
	DialogID string `json:"dialog_id"`
	Events   []struct {
		Type       string `json:"type"`
		Idx        *int   `json:"idx"`
		Content    string `json:"content"`
		Name       string `json:"name"`
		ID         string `json:"id"`
		File       string `json:"file"`
		Diff       string `json:"diff"`
		Checkpoint string `json:"checkpoint"`
	} `json:"events"`
	TotalEvents int  `json:"total_events"`
	HasMore     bool `json:"has_more"`
	FirstIdx    int  `json:"first_idx"`
	LastIdx     int  `json:"last_idx"`
}

// TestHistoryPaging follows the real server's tests: 30 messages page as
// 10-29 (has_more), then before=10 gives 0-9.
func TestHistoryPaging(t *testing.T) {
	_, base := newTestServer(t, Options{})
	for i := range 15 {
		chat(t, base, testDialog, fmt.Sprintf("question %d", i))
	}
	_, body := do(t, "GET", base+"/api/dialogs/"+testDialog+"/history", nil)
	h := decode[history](t, body)
	if h.FirstIdx != 10 || h.LastIdx != 29 || !h.HasMore || h.DialogID != testDialog {
		t.Fatalf("latest page: first %d last %d more %v", h.FirstIdx, h.LastIdx, h.HasMore)
	}
	// 30 messages + 15 reasoning blocks.
	if h.TotalEvents != 45 {
		t.Errorf("total_events = %d, want 45", h.TotalEvents)
	}
	var idx []int
	for _, e := range h.Events {
		if e.Idx != nil {
			idx = append(idx, *e.Idx)
		} else if e.Type != "reasoning" {
			t.Errorf("%s event with no idx", e.Type)
		}
	}
	if len(idx) != 20 || idx[0] != 10 || idx[19] != 29 {
		t.Errorf("indices %v", idx)
	}
	if h.Events[0].Type != "reasoning" && h.Events[0].Type != "user" {
		t.Errorf("page starts with %s", h.Events[0].Type)
	}
	_, body = do(t, "GET", base+"/api/dialogs/"+testDialog+"/history?before=10", nil)
	h = decode[history](t, body)
	if h.FirstIdx != 0 || h.LastIdx != 9 || h.HasMore {
		t.Errorf("page before 10: first %d last %d more %v", h.FirstIdx, h.LastIdx, h.HasMore)
	}
	if h.Events[0].Type != "user" || h.Events[0].Content != "question 0" || !hex40.MatchString(h.Events[0].Checkpoint) {
		t.Errorf("first event = %+v", h.Events[0])
	}
}

// TestHistoryOfAnEdit checks the order reasoning → message → tool calls →
// file edits, and that tool calls carry ids only here.
func TestHistoryOfAnEdit(t *testing.T) {
	s, base := newTestServer(t, Options{})
	_, stream := chat(t, base, testDialog, "rename total to sum in main.go")
	_, body := do(t, "GET", base+"/api/dialogs/"+testDialog+"/history", nil)
	h := decode[history](t, body)
	var types []string
	for _, e := range h.Events {
		types = append(types, e.Type)
	}
	want := []string{"user", "reasoning", "chat", "tool_call", "tool_call", "file_edit", "chat"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Fatalf("history order (-want +got):\n%s", diff)
	}
	if h.Events[3].ID != "call_1" || h.Events[4].Name != "replace_in_file" {
		t.Errorf("tool calls = %+v %+v", h.Events[3], h.Events[4])
	}
	if fe := h.Events[5]; fe.File != s.Workspace()+"/main.go" || !strings.HasPrefix(fe.Diff, "--- a/"+s.Workspace()) {
		t.Errorf("file_edit = %+v", fe)
	}
	if strings.Contains(string(stream), "call_1") {
		t.Errorf("tool-call ids must not appear in the SSE stream")
	}
	if h.TotalEvents != 7 {
		t.Errorf("total_events = %d, want 7", h.TotalEvents)
	}
}

func TestHistoryEmptyDialog(t *testing.T) {
	_, base := newTestServer(t, Options{})
	_, body := do(t, "POST", base+"/api/dialogs", nil)
	id := decode[map[string]string](t, body)["id"]
	_, body = do(t, "GET", base+"/api/dialogs/"+id+"/history", nil)
	if want := `{"dialog_id":"` + id + `","events":[],"total_events":0,"has_more":false,"first_idx":0,"last_idx":0}`; string(body) != want {
		t.Errorf("empty history = %s", body)
	}
}

type sessionBody struct {
	ActiveSession  *string `json:"active_session"`
	SessionRef     *string `json:"session_ref"`
	HasUnapproved  bool    `json:"has_unapproved"`
	LastApprovedAt *string `json:"last_approved_at"`
	ChangedFiles   []struct {
		Path        string  `json:"path"`
		Status      string  `json:"status"`
		Additions   int     `json:"additions"`
		Deletions   int     `json:"deletions"`
		BaseContent *string `json:"base_content"`
	} `json:"changed_files"`
}

// TestApproveResetRestore drives the versioning endpoints and checks the
// workspace really goes back.
func TestApproveResetRestore(t *testing.T) {
	s, base := newTestServer(t, Options{})
	ws := s.Workspace()
	dlg := base + "/api/dialogs/" + testDialog

	_, stream := chat(t, base, testDialog, "rename total to sum in main.go")
	userCP := regexp.MustCompile(`"checkpoint": "([0-9a-f]{40})"`).FindSubmatch(stream)
	if userCP == nil {
		t.Fatal("no checkpoint on the user event")
	}
	_, body := do(t, "GET", dlg+"/session", nil)
	st := decode[sessionBody](t, body)
	if !st.HasUnapproved || st.ActiveSession == nil || *st.ActiveSession != "session_1" || *st.SessionRef != "refs/heads/session_1" ||
		len(st.ChangedFiles) != 1 || st.ChangedFiles[0].Path != "main.go" || st.ChangedFiles[0].Status != "modified" ||
		st.ChangedFiles[0].Additions != 3 || st.ChangedFiles[0].Deletions != 3 || *st.ChangedFiles[0].BaseContent != fixture["main.go"] {
		t.Fatalf("session after edit = %s", body)
	}

	// Restore to the turn's checkpoint: the file comes back.
	res, body := do(t, "POST", dlg+"/restore", map[string]string{"checkpoint_id": string(userCP[1])})
	if res.StatusCode != 200 {
		t.Fatalf("restore: %d %s", res.StatusCode, body)
	}
	rb := decode[map[string]string](t, body)
	if rb["restored_to"] != string(userCP[1]) || !hex40.MatchString(rb["new_checkpoint"]) {
		t.Errorf("restore answered %s", body)
	}
	if got, _ := readFile(t, ws, "main.go"); got != fixture["main.go"] {
		t.Errorf("main.go after restore:\n%s", got)
	}
	res, body = do(t, "POST", dlg+"/restore", map[string]string{"checkpoint_id": strings.Repeat("a", 40)})
	if res.StatusCode != 404 || string(body) != `{"detail":"Checkpoint `+strings.Repeat("a", 40)+` not found in dialog `+testDialog+`"}` {
		t.Errorf("unknown checkpoint: %d %s", res.StatusCode, body)
	}
	if res, _ := do(t, "POST", dlg+"/restore", `{}`); res.StatusCode != 422 {
		t.Errorf("restore without checkpoint_id: %d", res.StatusCode)
	}

	// Edit again, then reset: back to the approved (initial) state, with
	// an auto-checkpoint of the discarded work.
	chat(t, base, testDialog, "create extra.txt with hello")
	chat(t, base, testDialog, "delete README.md")
	res, body = do(t, "POST", dlg+"/reset", nil)
	rs := decode[map[string]*string](t, body)
	if res.StatusCode != 200 || *rs["new_session"] != "session_2" || rs["pre_reset_checkpoint"] == nil || !hex40.MatchString(*rs["reset_to"]) {
		t.Fatalf("reset: %d %s", res.StatusCode, body)
	}
	if _, ok := readFile(t, ws, "extra.txt"); ok {
		t.Errorf("reset kept the created file")
	}
	if got, ok := readFile(t, ws, "README.md"); !ok || got != fixture["README.md"] {
		t.Errorf("reset did not bring README.md back")
	}
	_, body = do(t, "GET", dlg+"/session", nil)
	if want := `{"active_session":null,"session_ref":null,"has_unapproved":false,"last_approved_at":null,"changed_files":[]}`; string(body) != want {
		t.Errorf("session after reset = %s", body)
	}

	// Edit and approve: the new state is the base, reset keeps it.
	chat(t, base, testDialog, "rename helper to greet in main.go")
	res, body = do(t, "POST", dlg+"/approve", map[string]any{"message": "ok"})
	ap := decode[map[string]any](t, body)
	if res.StatusCode != 200 || ap["new_session"] != "session_3" || ap["commits_approved"].(float64) < 1 || !hex40.MatchString(ap["approved_commit"].(string)) {
		t.Fatalf("approve: %d %s", res.StatusCode, body)
	}
	_, body = do(t, "POST", dlg+"/approve", nil)
	if ap := decode[map[string]any](t, body); ap["commits_approved"].(float64) != 0 || ap["new_session"] != "session_4" {
		t.Errorf("approve with nothing new = %s", body)
	}
	do(t, "POST", dlg+"/reset", nil)
	if got, _ := readFile(t, ws, "main.go"); !strings.Contains(got, "func greet()") {
		t.Errorf("reset after approve lost the approved edit:\n%s", got)
	}
	_, body = do(t, "GET", dlg+"/session", nil)
	if st := decode[sessionBody](t, body); st.LastApprovedAt == nil || st.HasUnapproved {
		t.Errorf("session after approve = %s", body)
	}

	_, body = do(t, "GET", dlg+"/checkpoints", nil)
	cps := decode[struct {
		DialogID    string `json:"dialog_id"`
		Checkpoints []struct {
			CommitID string `json:"commit_id"`
			Message  string `json:"message"`
		} `json:"checkpoints"`
		Initial string `json:"initial_checkpoint"`
	}](t, body)
	if cps.DialogID != testDialog || len(cps.Checkpoints) < 5 || cps.Checkpoints[0].CommitID != cps.Initial {
		t.Errorf("checkpoints = %s", body)
	}
}

// TestNonStreaming covers stream=false.
func TestNonStreaming(t *testing.T) {
	_, base := newTestServer(t, Options{})
	res, body := do(t, "POST", base+"/api/chat", map[string]any{"messages": []map[string]string{{"role": "user", "content": "delete README.md"}}, "stream": false})
	got := decode[struct {
		Content  string            `json:"content"`
		Done     bool              `json:"done"`
		Metadata map[string]string `json:"metadata"`
	}](t, body)
	if res.StatusCode != 200 || got.Content != "I'll delete `README.md`.\n\nDeleted `README.md`." || !got.Done || !hex40.MatchString(got.Metadata["checkpoint"]) || got.Metadata["session"] != "session_1" {
		t.Errorf("non-streaming answer = %s", body)
	}
}

func TestHealth(t *testing.T) {
	s, base := newTestServer(t, Options{})
	res, body := do(t, "GET", base+"/health", nil)
	ws, _ := json.Marshal(s.Workspace())
	want := fmt.Sprintf(`{"status":"ok","service":"agentsmithy-server","server_status":null,"port":null,"pid":%d,"server_error":null,"config_valid":true,"config_errors":null,"workspace":%s,"protocol":"v2"}`, s.pid, ws)
	if res.StatusCode != 200 || string(body) != want {
		t.Errorf("health = %d %s", res.StatusCode, body)
	}
}

var _ = http.MethodGet
