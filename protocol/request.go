package protocol

// ChatRequest is one user turn as the chat client sends it. Each dialect's
// request body is built from it (docs/upstream.md lists the mapping).
type ChatRequest struct {
	DialogID string       // "" lets the upstream choose (AgentSmithy: its current dialog)
	TurnID   string       // stamped on the turn's events
	Message  string       // the user's message
	Context  *ChatContext // optional editor context
	// History is sent by dialects whose server keeps no history (textbook's
	// conversation_history); the others ignore it.
	History []HistoryMessage
}

// ChatContext is the editor context of a turn.
type ChatContext struct {
	CurrentFile *CurrentFile `json:"current_file,omitempty"`
}

// CurrentFile is the file the user is looking at (AgentSmithy's
// context.current_file).
type CurrentFile struct {
	Path      string `json:"path"`
	Language  string `json:"language,omitempty"`
	Content   string `json:"content,omitempty"`
	Selection string `json:"selection,omitempty"`
}

// HistoryMessage is one earlier message of a conversation.
type HistoryMessage struct {
	Role    string `json:"role"` // "user" | "assistant"
	Content string `json:"content"`
}
