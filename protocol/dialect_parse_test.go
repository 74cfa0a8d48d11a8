package protocol

import "testing"

// TestParseDialect: the one list of dialects reads every spelling users
// and settings use, and refuses a name it does not know, listing the
// known ones.
func TestParseDialect(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Dialect{
		"": DialectAuto, "auto": DialectAuto, " Auto ": DialectAuto,
		"agentsmithy": DialectAgentSmithy, "RAG": DialectRAG, "textbook": DialectTextbook,
		"lifecycle": DialectLifecycle, "oracle": DialectOracle,
	} {
		if got, err := ParseDialect(in); err != nil || got != want {
			t.Errorf("ParseDialect(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseDialect("openai"); err == nil || err.Error() != `unknown dialect "openai" (use auto, agentsmithy, rag, textbook, lifecycle or oracle)` {
		t.Errorf("ParseDialect(openai) = %v", err)
	}
}
