package protocol

// detect returns the dialect a payload proves, or DialectAuto when it could
// belong to several (a bare {"type":"done"}, say). The rules and their order
// are documented in docs/dialects.md ("Detection").
func detect(p *payload) Dialect {
	typ, typed := p.typeName()
	if p.has("dialog_id") {
		return DialectAgentSmithy
	}
	if p.has("message_id") {
		return DialectLifecycle
	}
	if !typed {
		switch {
		case p.has("message"):
			if v, _ := p.get("message"); jsonKind(v) == 'o' {
				return DialectRAG
			}
		case p.has("error") && p.has("details"):
			return DialectRAG
		case p.has("content"), p.has("done"), p.has("error"):
			return DialectAgentSmithy
		}
		return DialectAuto
	}
	switch typ {
	case "user", "chat", "chat_start", "chat_end", "reasoning", "reasoning_start", "reasoning_end",
		"summary_start", "summary_end", "file_edit", "search",
		"classification", "diff", "file_change", "edit", "change_applied", "file_patched":
		return DialectAgentSmithy
	case "session_start", "message_start", "message_end", "text", "tool_start", "tool_complete",
		"plot_result", "thumbnail_update", "table_result":
		return DialectLifecycle
	case "metadata":
		return DialectRAG
	case "status":
		if p.has("status") {
			return DialectLifecycle
		}
		return DialectRAG
	case "delta", "citation":
		return DialectTextbook
	case "thinking", "content", "source", "system":
		return DialectOracle
	case "tool_call":
		if p.has("tool_call") {
			return DialectOracle
		}
		if p.has("name") {
			return DialectAgentSmithy
		}
	case "tool_result":
		if p.has("tool_call_id") || p.has("tool_result") {
			return DialectOracle
		}
		if p.has("name") || p.has("result") {
			return DialectAgentSmithy
		}
	case "done":
		switch {
		case p.has("citations"):
			return DialectTextbook
		case p.has("tokens_used"), p.has("model_used"), p.has("context_id"):
			return DialectOracle
		case p.has("done"):
			return DialectAgentSmithy
		}
	case "error":
		switch {
		case p.has("code"):
			return DialectTextbook
		case p.has("details"):
			return DialectRAG
		}
	}
	return DialectAuto
}
