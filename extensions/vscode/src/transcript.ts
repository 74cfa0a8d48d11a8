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
  /** The first message changed since takeChanged last ran (Infinity: none). */
  private changed = Infinity;

  reset(dialogId?: string): void {
    this.state = { dialogId, messages: [], busy: false };
    this.changed = Infinity;
  }

  /** The index of the first message changed since the last call; what TranscriptSync sends. */
  takeChanged(): number {
    const c = this.changed;
    this.changed = Infinity;
    return c;
  }

  /** The user's message and an empty answer that the turn's events fill. */
  begin(text: string, context?: string): void {
    const user = message('user', text);
    if (context) user.context = context;
    this.changed = Math.min(this.changed, this.state.messages.length);
    this.state.messages.push(user, message('assistant'));
    this.state.busy = true;
  }

  private current(): Message {
    const ms = this.state.messages;
    const last = ms[ms.length - 1];
    if (last && last.role === 'assistant') {
      this.changed = Math.min(this.changed, ms.length - 1);
      return last;
    }
    const m = message('assistant');
    this.changed = Math.min(this.changed, ms.length);
    ms.push(m);
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

/**
 * What changed in a transcript since the chat view was last sent it: while a turn streams, the
 * answer's new text, and whole only the messages that changed otherwise (a tool line, a
 * citation, the end). Sending the whole transcript every few milliseconds cost time in
 * proportion to the dialog's length on both sides; this costs what arrived.
 */
export interface TranscriptPatch {
  dialogId?: string;
  busy: boolean;
  /** How many messages the transcript has. */
  length: number;
  /** Messages sent whole: new ones, and ones that changed other than by text growing. */
  set: Array<{ index: number; message: Message }>;
  /** Text and reasoning appended to messages the view has. */
  append: Array<{ index: number; text: string; reasoning: string }>;
}

interface Sent { text: number; reasoning: number; rest: string }

function sent(m: Message): Sent {
  return { text: m.text.length, reasoning: m.reasoning.length, rest: JSON.stringify({ ...m, text: undefined, reasoning: undefined }) };
}

/** Keeps track of what a view holds of a transcript, so that it is sent only what changed. */
export class TranscriptSync {
  private state: TranscriptState | undefined;
  private sent: Sent[] = [];

  /** Records that the view was sent t's whole state. */
  full(t: Transcript): void {
    t.takeChanged();
    this.state = t.state;
    this.sent = t.state.messages.map(sent);
  }

  /**
   * What changed in t since the last full or patch, or undefined when the view needs the whole
   * state: another transcript, another dialog, a history loaded.
   */
  patch(t: Transcript): TranscriptPatch | undefined {
    const ms = t.state.messages;
    if (t.state !== this.state || ms.length < this.sent.length) return undefined;
    const p: TranscriptPatch = { dialogId: t.state.dialogId, busy: t.state.busy, length: ms.length, set: [], append: [] };
    for (let i = Math.min(t.takeChanged(), this.sent.length); i < ms.length; i++) {
      const m = ms[i];
      const now = sent(m);
      const was = this.sent[i];
      if (!was || was.rest !== now.rest || now.text < was.text || now.reasoning < was.reasoning) {
        p.set.push({ index: i, message: structuredClone(m) });
      } else if (now.text > was.text || now.reasoning > was.reasoning) {
        p.append.push({ index: i, text: m.text.slice(was.text), reasoning: m.reasoning.slice(was.reasoning) });
      }
      this.sent[i] = now;
    }
    return p;
  }
}

/** Applies a patch to the transcript a view holds; returns the indexes of the messages it changed. */
export function applyPatch(state: TranscriptState, p: TranscriptPatch): number[] {
  state.dialogId = p.dialogId;
  state.busy = p.busy;
  state.messages.length = Math.min(state.messages.length, p.length);
  const changed = new Set<number>();
  for (const { index, message } of p.set) {
    state.messages[index] = message;
    changed.add(index);
  }
  for (const a of p.append) {
    const m = state.messages[a.index];
    if (!m) continue;
    m.text += a.text;
    m.reasoning += a.reasoning;
    changed.add(a.index);
  }
  return [...changed].sort((a, b) => a - b);
}
