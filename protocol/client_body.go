package protocol

// BodyFields renames the keys of the simple request bodies, those of the
// dialects whose contracts show no request or only a small one (textbook,
// rag, oracle, lifecycle). "" keeps the dialect's default; "-" leaves the
// value out of the body.
type BodyFields struct {
	Message  string // default "message"
	History  string // default "conversation_history" (lifecycle: left out; its server keeps the history)
	DialogID string // default oracle "context_id", lifecycle "sessionId", others left out
}

// simpleFields are the defaults of BodyFields per dialect (docs/upstream.md).
func simpleFields(d Dialect) BodyFields {
	switch d {
	case DialectLifecycle:
		return BodyFields{Message: "message", History: "-", DialogID: "sessionId"}
	case DialectOracle:
		return BodyFields{Message: "message", History: "conversation_history", DialogID: "context_id"}
	default: // textbook, rag
		return BodyFields{Message: "message", History: "conversation_history", DialogID: "-"}
	}
}

func (f BodyFields) over(def BodyFields) BodyFields {
	if f.Message != "" {
		def.Message = f.Message
	}
	if f.History != "" {
		def.History = f.History
	}
	if f.DialogID != "" {
		def.DialogID = f.DialogID
	}
	return def
}

// requestBody is the JSON body of the chat POST for the configured dialect.
// Auto-detection sends AgentSmithy's body.
func (c *Client) requestBody(req ChatRequest) ([]byte, error) {
	var body map[string]any
	switch c.cfg.Dialect {
	case DialectAuto, DialectAgentSmithy:
		body = agentSmithyBody(req)
	default:
		body = c.simpleBody(req)
	}
	for k, v := range c.cfg.ExtraBody {
		if v == nil {
			delete(body, k)
			continue
		}
		body[k] = v
	}
	return marshalBody(body)
}

// agentSmithyBody follows AgentSmithy's ChatRequest: the server keeps the
// dialog's history itself and reads only the last user message, so smith
// sends just that one.
func agentSmithyBody(req ChatRequest) map[string]any {
	body := map[string]any{
		"messages": []HistoryMessage{{Role: "user", Content: req.Message}},
		"stream":   true,
	}
	if req.Context != nil && req.Context.CurrentFile != nil {
		body["context"] = req.Context
	}
	if req.DialogID != "" {
		body["dialog_id"] = req.DialogID
	}
	return body
}

// simpleBody is {message, conversation_history, <dialog key>} with the
// configured key names.
func (c *Client) simpleBody(req ChatRequest) map[string]any {
	f := c.cfg.Fields.over(simpleFields(c.cfg.Dialect))
	body := map[string]any{}
	if f.Message != "-" {
		body[f.Message] = req.Message
	}
	if f.History != "-" {
		h := req.History
		if h == nil {
			h = []HistoryMessage{}
		}
		body[f.History] = h
	}
	if f.DialogID != "-" && req.DialogID != "" {
		body[f.DialogID] = req.DialogID
	}
	return body
}
