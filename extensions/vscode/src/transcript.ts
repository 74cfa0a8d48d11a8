// The chat transcript of one dialog as plain JSON: the extension host builds it from
// smith/event notifications (and smith/history when a dialog is switched to) and hands it to
// the webview, which only renders it. Keeping it here, not in the webview, is what lets the
// view come back whole after it was hidden, and lets the Node tests check it without a browser.
import type { Citation, EventParams, Outcome } from './protocol';

export interface ToolLine {
  id?: string;
  name: string;
  status: 'running' | 'done' | 'error';
  /** One short line: the tool's main argument, or its error. */
  detail?: string;
}

export interface ChangeLine { path: string; kind: string; appliedUpstream?: boolean }

export interface Message {
  role: 'user' | 'assistant';
  text: string;
  reasoning: string;
  tools: ToolLine[];
  citations: Citation[];
  notices: string[];
  errors: string[];
  changes: ChangeLine[];
  /** For user messages: the file/selection sent as context, as a short label. */
  context?: string;
  turnId?: string;
  outcome?: Outcome;
}

export interface TranscriptState {
  dialogId?: string;
  messages: Message[];
  busy: boolean;
}

function message(role: Message['role'], text = ''): Message {
  return { role, text, reasoning: '', tools: [], citations: [], notices: [], errors: [], changes: [] };
}

/** A one-line summary of a tool call's arguments (the path or query, when there is one). */
export function toolDetail(args: unknown): string | undefined {
  if (args === undefined || args === null) return undefined;
  let v: unknown = args;
  if (typeof v === 'string') {
    try { v = JSON.parse(v as string); } catch { return (v as string).slice(0, 80); }
  }
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    for (const k of ['path', 'file', 'query', 'pattern', 'command', 'url']) {
      if (typeof o[k] === 'string') return (o[k] as string).slice(0, 80);
    }
  }
  return undefined;
}

export class Transcript {
  state: TranscriptState = { messages: [], busy: false };

  reset(dialogId?: string): void {
    this.state = { dialogId, messages: [], busy: false };
  }

  /** The user's message and an empty answer that the turn's events fill. */
  begin(text: string, context?: string): void {
    const user = message('user', text);
    if (context) user.context = context;
    this.state.messages.push(user, message('assistant'));
    this.state.busy = true;
  }

  private current(): Message {
    const last = this.state.messages[this.state.messages.length - 1];
    if (last && last.role === 'assistant') return last;
    const m = message('assistant');
    this.state.messages.push(m);
    return m;
  }

  /** Folds one smith/event into the transcript; returns false for events of another dialog. */
  apply(p: EventParams): boolean {
    if (this.state.dialogId && p.dialogId && p.dialogId !== this.state.dialogId) return false;
    if (!this.state.dialogId) this.state.dialogId = p.dialogId;
    const m = this.current();
    m.turnId = p.turnId;
    const ev = p.event;
    switch (ev.type) {
      case 'text':
        m.text += ev.text ?? '';
        break;
      case 'reasoning':
        m.reasoning += ev.text ?? '';
        break;
      case 'toolCall':
        if (ev.toolCall) {
          m.tools.push({ id: ev.toolCall.id, name: ev.toolCall.name, status: 'running', detail: toolDetail(ev.toolCall.args) });
        }
        break;
      case 'toolResult': {
        const r = ev.toolResult;
        if (!r) break;
        const line = [...m.tools].reverse().find((t) => (r.id && t.id === r.id) || (!r.id && t.name === r.name && t.status === 'running'));
        if (line) {
          line.status = r.error ? 'error' : 'done';
          if (r.error) line.detail = r.error.slice(0, 120);
        } else {
          m.tools.push({ id: r.id, name: r.name ?? 'tool', status: r.error ? 'error' : 'done', detail: r.error });
        }
        break;
      }
      case 'change':
        if (ev.change) m.changes.push({ path: ev.change.path, kind: ev.change.kind, appliedUpstream: ev.change.appliedUpstream });
        break;
      case 'citation':
        if (ev.citation) m.citations.push(ev.citation);
        break;
      case 'notice':
        // The echo of the user's message and the upstream's task classification say nothing new.
        if (ev.notice?.message && ev.notice.kind !== 'user' && ev.notice.kind !== 'classification') m.notices.push(ev.notice.message);
        break;
      case 'error':
        if (ev.error) m.errors.push(ev.error.message || ev.error.code);
        break;
      case 'violation':
        if (ev.violation) m.notices.push(`stream: ${ev.violation.message}`);
        break;
      case 'turnEnd':
        m.outcome = ev.turnEnd?.outcome;
        if (ev.turnEnd?.reason && ev.turnEnd.outcome !== 'completed') m.errors.push(ev.turnEnd.reason);
        this.state.busy = false;
        for (const t of m.tools) if (t.status === 'running') t.status = 'done';
        break;
    }
    return true;
  }

  /** Ends the turn from the request's result (for a turn whose turnEnd never came, or an error). */
  end(outcome: Outcome, error?: string): void {
    const m = this.current();
    if (!m.outcome) m.outcome = outcome;
    if (error && !m.errors.includes(error)) m.errors.push(error);
    this.state.busy = false;
  }

  /**
   * Loads a dialog's history page (smith/history: AgentSmithy's page, or smith's own record of
   * local dialogs, both {events: [{type: user|chat|reasoning|tool_call|file_edit, ...}]}).
   */
  loadHistory(dialogId: string, page: unknown): void {
    this.reset(dialogId);
    const events = (page as { events?: Array<Record<string, unknown>> } | null)?.events ?? [];
    for (const e of events) {
      const content = typeof e.content === 'string' ? e.content : '';
      switch (e.type) {
        case 'user':
          this.state.messages.push(message('user', content));
          break;
        case 'chat':
          this.current().text += content;
          break;
        case 'reasoning':
          this.current().reasoning += content;
          break;
        case 'tool_call':
          this.current().tools.push({ name: String(e.name ?? 'tool'), status: 'done', detail: toolDetail(e.args) });
          break;
        case 'file_edit':
          this.current().changes.push({ path: String(e.file ?? ''), kind: 'modify', appliedUpstream: true });
          break;
      }
    }
    // A history ends with an answer, not with an empty assistant placeholder.
    const last = this.state.messages[this.state.messages.length - 1];
    if (last && last.role === 'assistant' && !last.text && !last.reasoning && last.tools.length === 0 && last.changes.length === 0) {
      this.state.messages.pop();
    }
  }
}
