package upstream

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/smith-dev/smith/protocol"
)

// The demo agent understands a handful of plain-English requests (see
// Phrases) and answers everything else with a helpful text that quotes what
// a plain text search of the workspace found. It is deterministic: the same
// workspace and message give the same script, byte for byte.

// Phrase documents one request the demo agent understands.
type Phrase struct {
	Pattern string // the form, with UPPERCASE placeholders
	Example string
	Effect  string
}

// Phrases lists the requests of the demo agent, for help texts and docs.
// The slice is new on every call.
func Phrases() []Phrase { return slices.Clone(phrases) }

var phrases = []Phrase{
	{"rename IDENT to NEW in FILE", "rename total to sum in calc.go", "replaces every whole-word IDENT in FILE (one hunk per distant occurrence: a rename touching lines more than 6 apart gives a diff with 2+ hunks)"},
	{"rename IDENT to NEW everywhere", "rename Greet to Welcome everywhere", "the same in every text file that contains IDENT (one change per file); also 'across the workspace', 'in all files', or no 'in FILE' at all"},
	{"add a comment to FUNC in FILE", "add a comment to main in main.go", "inserts a one-line comment above the definition of FUNC, in the file's comment syntax"},
	{"create FILE with TEXT", `create notes/todo.md with "# Todo\n- write tests"`, "creates (or overwrites) FILE with TEXT and a final newline; quotes are removed, \\n becomes a newline"},
	{"delete FILE", "delete old/unused.go", "deletes FILE"},
	{"show a table of the files", "show a table of the files", "lists files and line counts (lifecycle: a table_result event)"},
	{"plot the file sizes", "plot the file sizes", "line counts as a plot (lifecycle: plot_result and thumbnail_update)"},
	{"fail with TEXT", "fail with quota exceeded", "streams one sentence, then ends the turn with the dialect's error event carrying TEXT"},
	{"... long task ...", "this is a long task: explain every file", "oracle: a system limit_warning before the answer"},
}

// script is one turn of the demo agent, independent of any dialect.
type script struct {
	Message   string
	Reasoning string
	Intro     string // text before the tools run ("" if none)
	Tools     []*toolStep
	Outro     string // text after the tools ran
	Citations []citation
	Table     *tableData
	Plot      bool
	LongTask  bool
	// Fail, when set, ends the turn with an upstream error of this text
	// after the intro (the dialect's own error event).
	Fail string
}

// Text is the whole assistant answer of the turn.
func (s *script) Text() string { return s.Intro + s.Outro }

// toolStep is one tool call; Edit is set for the file tools.
type toolStep struct {
	ID   string
	Name string
	Args any // ordered struct, serialised as the tool_call's args
	// Result is the tool's result object as dialects that stream results
	// show it (v0 tool_result, oracle tool_result, lifecycle tool_complete).
	Result any
	Edit   *fileEdit
}

// fileEdit is a change the agent makes to one file.
type fileEdit struct {
	Rel      string
	Kind     protocol.ChangeKind
	Old, New string // texts with LF line ends; Old "" for create, New "" for delete
	Existed  bool
	Write    bool // write_to_file (create or overwrite), not replace_in_file
	Reason   string
}

type citation struct {
	File    string
	Header  string
	Line    int
	Score   float64
	Snippet string
}

type tableData struct {
	Title string
	Rows  []fileCount
}

type fileCount struct {
	File  string `json:"file"`
	Lines int    `json:"lines"`
}

// Tool argument and result shapes (field order is the wire order).
type pathArgs struct {
	Path string `json:"path"`
}
type replaceArgs struct {
	Path string `json:"path"`
	Diff string `json:"diff"`
}
type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}
type searchArgs struct {
	Path  string `json:"path"`
	Regex string `json:"regex"`
}
type readResult struct {
	Type    string `json:"type"`
	Path    string `json:"path"`
	Content string `json:"content"`
}

// changeResult is the tool-result payload that carries a file change in
// dialects without a diff event (docs/dialects.md).
type changeResult struct {
	Path    string  `json:"path"`
	Diff    *string `json:"diff,omitempty"`
	Content *string `json:"content,omitempty"`
	Kind    string  `json:"kind,omitempty"`
	Reason  string  `json:"reason,omitempty"`
}

// agentPhrases are the demo agent's patterns. They are compiled on first
// use, not at program start: every smith command links this package, and
// compiling the Unicode classes costs milliseconds that `smith apply` and
// `smith version` should not pay.
var agentPhrases = sync.OnceValue(func() *phrasePatterns {
	return &phrasePatterns{
		renameIn:  regexp.MustCompile(`(?i)^\s*rename\s+([\pL_][\pL\pN_]*)\s+to\s+([\pL_][\pL\pN_]*)\s+in\s+(\S+?)[.!]?\s*$`),
		renameAll: regexp.MustCompile(`(?i)^\s*rename\s+([\pL_][\pL\pN_]*)\s+to\s+([\pL_][\pL\pN_]*)\b(.*)$`),
		comment:   regexp.MustCompile(`(?i)^\s*add\s+(?:a\s+)?comment\s+to\s+(?:the\s+)?(?:function\s+|func\s+|method\s+)?([\pL_][\pL\pN_.]*)\s+in\s+(\S+?)[.!]?\s*$`),
		create:    regexp.MustCompile(`(?is)^\s*create\s+(?:a\s+)?(?:file\s+)?(\S+)\s+with\s+(.*)$`),
		delete:    regexp.MustCompile(`(?i)^\s*(?:delete|remove)\s+(?:the\s+)?(?:file\s+)?(\S+?)[.!]?\s*$`),
		word:      regexp.MustCompile(`[\pL_][\pL\pN_]{3,}`),
		fail:      regexp.MustCompile(`(?is)^\s*fail\s+with\s+(.+?)\s*$`),
		longTask:  regexp.MustCompile(`(?i)\blong\s+task\b`),
		table:     regexp.MustCompile(`(?i)\btable\b`),
		plot:      regexp.MustCompile(`(?i)\b(plot|chart|graph)\b`),
	}
})

type phrasePatterns struct {
	renameIn  *regexp.Regexp
	renameAll *regexp.Regexp
	comment   *regexp.Regexp
	create    *regexp.Regexp
	delete    *regexp.Regexp
	word      *regexp.Regexp
	fail      *regexp.Regexp
	longTask  *regexp.Regexp
	table     *regexp.Regexp
	plot      *regexp.Regexp
}

var (
	stopWords    = map[string]bool{"what": true, "where": true, "which": true, "does": true, "this": true, "that": true, "with": true, "from": true, "have": true, "there": true, "about": true, "please": true, "file": true, "files": true, "show": true, "tell": true, "explain": true, "would": true, "could": true, "should": true, "the": true, "workspace": true}
	commentStyle = map[string]string{".py": "#", ".sh": "#", ".rb": "#", ".yaml": "#", ".yml": "#", ".toml": "#", ".r": "#", ".pl": "#", ".lua": "--", ".sql": "--", ".hs": "--", ".el": ";;", ".lisp": ";;", ".clj": ";;", ".vim": "\""}
)

// plan builds the script for a message. It reads the workspace but never
// writes to it: edits are carried out (or not) by the dialect.
func plan(ws *workspace, message string) *script {
	s := &script{Message: message, LongTask: agentPhrases().longTask.MatchString(message)}
	msg := strings.TrimSpace(message)
	switch m := matchAny(msg); {
	case m.kind == "renameIn":
		planRenameIn(ws, s, m.args[0], m.args[1], m.args[2])
	case m.kind == "renameAll":
		planRenameAll(ws, s, m.args[0], m.args[1])
	case m.kind == "comment":
		planComment(ws, s, m.args[0], m.args[1])
	case m.kind == "create":
		planCreate(ws, s, m.args[0], m.args[1])
	case m.kind == "delete":
		planDelete(ws, s, m.args[0])
	case m.kind == "fail":
		s.Reasoning = "The user asked for a failure, so I'll start answering and then report an error."
		s.Intro = "Let me try that.\n\n"
		s.Fail = m.args[0]
	case agentPhrases().plot.MatchString(msg):
		planTable(ws, s, true)
	case agentPhrases().table.MatchString(msg):
		planTable(ws, s, false)
	default:
		planHelp(ws, s, msg)
	}
	for i, t := range s.Tools {
		t.ID = fmt.Sprintf("call_%d", i+1)
	}
	if len(s.Citations) == 0 {
		s.Citations = citationsFor(ws, searchWords(msg))
	}
	return s
}

type matched struct {
	kind string
	args []string
}

func matchAny(msg string) matched {
	if m := agentPhrases().renameIn.FindStringSubmatch(msg); m != nil {
		return matched{"renameIn", m[1:]}
	}
	if m := agentPhrases().renameAll.FindStringSubmatch(msg); m != nil {
		if rest := strings.ToLower(m[3]); allFiles(rest) || !strings.Contains(rest+" ", " in ") {
			return matched{"renameAll", m[1:3]}
		}
	}
	if m := agentPhrases().comment.FindStringSubmatch(msg); m != nil {
		return matched{"comment", m[1:]}
	}
	if m := agentPhrases().fail.FindStringSubmatch(msg); m != nil {
		return matched{"fail", m[1:]}
	}
	if m := agentPhrases().create.FindStringSubmatch(msg); m != nil {
		return matched{"create", m[1:]}
	}
	if m := agentPhrases().delete.FindStringSubmatch(msg); m != nil {
		return matched{"delete", m[1:]}
	}
	return matched{}
}

func allFiles(rest string) bool {
	r := strings.ToLower(rest)
	return strings.Contains(r, "all files") || strings.Contains(r, "the workspace") || strings.Contains(r, "everywhere") || strings.Contains(r, "every file")
}

// cleanRel strips quotes and backticks from a file name and cleans it;
// ".." stays, so that the workspace refuses a path that leaves it.
func cleanRel(name string) string {
	name = strings.Trim(name, "`'\"")
	name = strings.TrimSuffix(name, ",")
	return path.Clean(strings.ReplaceAll(name, "\\", "/"))
}

func wordRe(ident string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^\pL\pN_])` + regexp.QuoteMeta(ident) + `($|[^\pL\pN_])`)
}

// replaceWord replaces whole-word occurrences and counts them.
func replaceWord(text, old, new string) (string, int) {
	re := wordRe(old)
	var sb strings.Builder
	n := 0
	for _, line := range splitKeepLF(text) {
		// Loop because adjacent matches share their separator.
		for {
			loc := re.FindStringSubmatchIndex(line)
			if loc == nil {
				break
			}
			start := loc[3] // end of the leading separator
			line = line[:start] + new + line[start+len(old):]
			n++
		}
		sb.WriteString(line)
	}
	return sb.String(), n
}

// searchReplaceBlocks renders AgentSmithy's replace_in_file argument: one
// SEARCH/REPLACE block per changed run of lines; a pure insertion carries
// the line it goes before (or after, at the end) as its anchor.
func searchReplaceBlocks(oldText, newText string) string {
	a, b := splitKeepLF(oldText), splitKeepLF(newText)
	var blocks []string
	for _, c := range newSeqMatcher(a, b).opcodes() {
		if c.tag == 'e' {
			continue
		}
		search, replace := a[c.i1:c.i2], b[c.j1:c.j2]
		if len(search) == 0 && len(a) > 0 {
			if c.i1 < len(a) {
				search, replace = a[c.i1:c.i1+1], append(slices.Clone(replace), a[c.i1])
			} else {
				search, replace = a[c.i1-1:c.i1], append([]string{a[c.i1-1]}, replace...)
			}
		}
		blocks = append(blocks, "------- SEARCH\n"+withFinalLF(strings.Join(search, ""))+"=======\n"+withFinalLF(strings.Join(replace, ""))+"+++++++ REPLACE")
	}
	return strings.Join(blocks, "\n")
}

func withFinalLF(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

func readStep(ws *workspace, rel, content string) *toolStep {
	abs, _ := ws.abs(rel)
	return &toolStep{Name: "read_file", Args: pathArgs{rel}, Result: readResult{"read_file_result", abs, content}}
}

func modifyStep(rel, oldText, newText, reason string) *toolStep {
	return &toolStep{
		Name: "replace_in_file",
		Args: replaceArgs{rel, searchReplaceBlocks(oldText, newText)},
		Edit: &fileEdit{Rel: rel, Kind: protocol.ChangeModify, Old: oldText, New: newText, Existed: true, Reason: reason},
	}
}

func planRenameIn(ws *workspace, s *script, old, new, file string) {
	rel := cleanRel(file)
	s.Reasoning = fmt.Sprintf("The user wants every `%s` in %s renamed to `%s`. I'll read the file and replace each whole-word occurrence.", old, rel, new)
	text, ok, err := ws.read(rel)
	if err != nil || !ok {
		s.Outro = notFound(ws, rel, err)
		return
	}
	s.Intro = fmt.Sprintf("I'll rename `%s` to `%s` in `%s`.\n\n", old, new, rel)
	s.Tools = append(s.Tools, readStep(ws, rel, text))
	newText, n := replaceWord(text, old, new)
	if n == 0 {
		s.Outro = fmt.Sprintf("`%s` does not occur as a whole word in `%s`, so nothing changed.", old, rel)
		return
	}
	s.Tools = append(s.Tools, modifyStep(rel, text, newText, fmt.Sprintf("Rename %s to %s", old, new)))
	s.Outro = fmt.Sprintf("Renamed %s of `%s` to `%s` in `%s`.", plural(n, "occurrence"), old, new, rel)
	s.Citations = citationsFor(ws, []string{old})
}

func planRenameAll(ws *workspace, s *script, old, new string) {
	s.Reasoning = fmt.Sprintf("The user wants `%s` renamed to `%s` across the workspace. I'll search for it and edit each file that uses it.", old, new)
	s.Intro = fmt.Sprintf("I'll rename `%s` to `%s` in every file that uses it.\n\n", old, new)
	s.Tools = append(s.Tools, &toolStep{Name: "search_files", Args: searchArgs{".", `\b` + old + `\b`}, Result: map[string]any{"type": "search_files_result", "matches": len(ws.search([]string{old}, 1000))}})
	files, _ := ws.files()
	var touched []string
	total := 0
	for _, rel := range files {
		text, ok, err := ws.read(rel)
		if err != nil || !ok || !textFile([]byte(text)) {
			continue
		}
		newText, n := replaceWord(text, old, new)
		if n == 0 {
			continue
		}
		total += n
		touched = append(touched, "`"+rel+"`")
		s.Tools = append(s.Tools, modifyStep(rel, text, newText, fmt.Sprintf("Rename %s to %s", old, new)))
	}
	if total == 0 {
		s.Outro = fmt.Sprintf("`%s` does not occur as a whole word in any file of the workspace, so nothing changed.", old)
		return
	}
	s.Outro = fmt.Sprintf("Renamed %s of `%s` to `%s` in %s: %s.", plural(total, "occurrence"), old, new, plural(len(touched), "file"), strings.Join(touched, ", "))
	s.Citations = citationsFor(ws, []string{old})
}

var reDefPrefix = `^(\s*)(?:(?:export\s+|pub\s+|async\s+|static\s+|public\s+|private\s+)*(?:func|def|function|fn|class|sub|local\s+function)\s+(?:\([^)]*\)\s*)?)`

func planComment(ws *workspace, s *script, fn, file string) {
	rel := cleanRel(file)
	s.Reasoning = fmt.Sprintf("The user wants a comment on `%s` in %s. I'll find its definition and add a line above it.", fn, rel)
	text, ok, err := ws.read(rel)
	if err != nil || !ok {
		s.Outro = notFound(ws, rel, err)
		return
	}
	s.Intro = fmt.Sprintf("I'll add a comment above `%s` in `%s`.\n\n", fn, rel)
	s.Tools = append(s.Tools, readStep(ws, rel, text))
	lines := splitKeepLF(text)
	def := regexp.MustCompile(reDefPrefix + regexp.QuoteMeta(fn) + `\b`)
	at := -1
	for i, l := range lines {
		if def.MatchString(l) {
			at = i
			break
		}
	}
	if at < 0 {
		s.Outro = fmt.Sprintf("I could not find a definition of `%s` in `%s` (I looked for func/def/function/fn/class lines), so nothing changed.", fn, rel)
		return
	}
	indent := def.FindStringSubmatch(lines[at])[1]
	prefix := commentStyle[strings.ToLower(path.Ext(rel))]
	if prefix == "" {
		prefix = "//"
	}
	comment := fmt.Sprintf("%s%s %s is documented by the smith demo agent.\n", indent, prefix, fn)
	newText := strings.Join(lines[:at], "") + comment + strings.Join(lines[at:], "")
	s.Tools = append(s.Tools, modifyStep(rel, text, newText, "Add a comment to "+fn))
	s.Outro = fmt.Sprintf("Added a comment above `%s` at line %d of `%s`.", fn, at+1, rel)
	s.Citations = citationsFor(ws, []string{fn})
}

func planCreate(ws *workspace, s *script, file, content string) {
	rel := cleanRel(file)
	if _, err := ws.abs(rel); err != nil {
		s.Outro = notFound(ws, rel, err)
		return
	}
	content = strings.TrimSpace(content)
	if len(content) >= 2 && strings.IndexByte("\"'`", content[0]) >= 0 && content[len(content)-1] == content[0] {
		content = content[1 : len(content)-1]
	}
	content = strings.ReplaceAll(content, `\n`, "\n")
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	old, existed, _ := ws.read(rel)
	verb := "create"
	if existed {
		verb = "overwrite"
	}
	s.Reasoning = fmt.Sprintf("The user wants %s written with the given text. I'll %s it.", rel, verb)
	s.Intro = fmt.Sprintf("I'll %s `%s`.\n\n", verb, rel)
	kind := protocol.ChangeCreate
	if existed {
		kind = protocol.ChangeModify
	}
	s.Tools = append(s.Tools, &toolStep{
		Name: "write_to_file",
		Args: writeArgs{rel, content},
		Edit: &fileEdit{Rel: rel, Kind: kind, Old: old, New: content, Existed: existed, Write: true, Reason: "Write " + rel},
	})
	s.Outro = fmt.Sprintf("Wrote `%s` (%s).", rel, plural(strings.Count(content, "\n"), "line"))
}

func planDelete(ws *workspace, s *script, file string) {
	rel := cleanRel(file)
	s.Reasoning = fmt.Sprintf("The user wants %s deleted. I'll check that it exists and delete it.", rel)
	old, ok, err := ws.read(rel)
	if err != nil || !ok {
		s.Outro = notFound(ws, rel, err)
		return
	}
	s.Intro = fmt.Sprintf("I'll delete `%s`.\n\n", rel)
	s.Tools = append(s.Tools, &toolStep{
		Name: "delete_file",
		Args: pathArgs{rel},
		Edit: &fileEdit{Rel: rel, Kind: protocol.ChangeDelete, Old: old, Existed: true, Reason: "Delete " + rel},
	})
	s.Outro = fmt.Sprintf("Deleted `%s`.", rel)
}

func planTable(ws *workspace, s *script, plot bool) {
	files, _ := ws.files()
	t := &tableData{Title: "Lines per file"}
	var sb strings.Builder
	sb.WriteString("| file | lines |\n|---|---|\n")
	for _, rel := range files[:min(len(files), 20)] {
		text, _, _ := ws.read(rel)
		n := strings.Count(text, "\n")
		t.Rows = append(t.Rows, fileCount{rel, n})
		fmt.Fprintf(&sb, "| %s | %d |\n", rel, n)
	}
	s.Reasoning = "The user wants an overview of the files. I'll count the lines of each."
	s.Intro = fmt.Sprintf("The workspace has %s.\n\n", plural(len(files), "file"))
	s.Outro = sb.String()
	s.Table = t
	s.Plot = plot
}

func planHelp(ws *workspace, s *script, msg string) {
	words := searchWords(msg)
	s.Reasoning = "The request is not one of the edits I know, so I'll search the workspace and explain what I can do."
	var sb strings.Builder
	sb.WriteString("I'm the smith demo agent. I can change files when you ask in plain words, for example:\n")
	for _, p := range phrases[:5] {
		fmt.Fprintf(&sb, "- `%s`\n", p.Example)
	}
	if len(words) == 0 {
		sb.WriteString("\nAsk about a name in your code and I'll show where it occurs.")
		s.Outro = sb.String()
		return
	}
	hits := ws.search(words, 5)
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = `"` + w + `"`
	}
	if len(hits) == 0 {
		fmt.Fprintf(&sb, "\nI searched the workspace for %s and found nothing.", strings.Join(quoted, ", "))
	} else {
		fmt.Fprintf(&sb, "\nI searched the workspace for %s and found:\n", strings.Join(quoted, ", "))
		for _, h := range hits {
			fmt.Fprintf(&sb, "- `%s:%d`: %s\n", h.Path, h.Line, truncate(h.Text, 80))
		}
	}
	s.Outro = sb.String()
}

func notFound(ws *workspace, rel string, err error) string {
	if errors.Is(err, errOutside) {
		return fmt.Sprintf("I won't touch `%s`: it is outside the workspace (or in its .git or .agentsmithy folder).", rel)
	}
	if err != nil {
		return fmt.Sprintf("I can't use `%s`: %v.", rel, err)
	}
	files, _ := ws.files()
	var names []string
	for _, f := range files[:min(len(files), 8)] {
		names = append(names, "`"+f+"`")
	}
	if len(names) == 0 {
		return fmt.Sprintf("I could not find `%s`: the workspace has no files yet.", rel)
	}
	return fmt.Sprintf("I could not find `%s` in the workspace. Files I can see: %s.", rel, strings.Join(names, ", "))
}

// searchWords picks the words of a message worth searching for.
func searchWords(msg string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range agentPhrases().word.FindAllString(msg, -1) {
		lw := strings.ToLower(w)
		if stopWords[lw] || seen[lw] {
			continue
		}
		seen[lw] = true
		out = append(out, w)
		if len(out) == 4 {
			break
		}
	}
	return out
}

// citationsFor cites up to three files where the words occur, with a
// deterministic score that falls with the rank.
func citationsFor(ws *workspace, words []string) []citation {
	if len(words) == 0 {
		return nil
	}
	var out []citation
	seen := map[string]bool{}
	for _, h := range ws.search(words, 50) {
		if seen[h.Path] {
			continue
		}
		seen[h.Path] = true
		out = append(out, citation{
			File:    h.Path,
			Header:  headerContext(ws, h),
			Line:    h.Line,
			Score:   0.92 - 0.07*float64(len(out)),
			Snippet: truncate(h.Text, 100),
		})
		if len(out) == 3 {
			break
		}
	}
	return out
}

// headerContext is the breadcrumb of a hit: the Markdown headings above it
// ("Top > Sub"), or the file name and line for code.
func headerContext(ws *workspace, h searchHit) string {
	if strings.HasSuffix(strings.ToLower(h.Path), ".md") {
		text, _, _ := ws.read(h.Path)
		var crumbs []string
		for i, l := range splitKeepLF(text) {
			if i+1 > h.Line {
				break
			}
			if t := strings.TrimLeft(l, "#"); len(t) < len(l) && strings.HasPrefix(t, " ") {
				level := len(l) - len(t)
				crumbs = append(crumbs[:min(len(crumbs), level-1)], strings.TrimSpace(t))
			}
		}
		if len(crumbs) > 0 {
			return strings.Join(crumbs, " > ")
		}
	}
	return fmt.Sprintf("%s > line %d", h.Path, h.Line)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// deltas splits text into the small pieces a model would stream: at most
// about 12 bytes, cut after a space where possible, never inside a UTF-8
// sequence.
func deltas(text string) []string {
	var out []string
	for text != "" {
		if len(text) <= 12 {
			return append(out, text)
		}
		cut := strings.LastIndexByte(text[:12], ' ') + 1
		if cut <= 0 {
			cut = 12
			for cut < len(text) && !utf8.RuneStart(text[cut]) {
				cut++
			}
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	return out
}
