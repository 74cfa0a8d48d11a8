// The chat view's script: renders the transcript the extension host sends and reports what the
// user does. It holds no logic of its own beyond rendering; state survives hiding through
// vscode.setState, and the host sends the whole state again when the view comes back. While a
// turn streams the host sends patches (what changed), and only the messages they name are
// rendered again.
import MarkdownIt from 'markdown-it';
import DOMPurify from 'dompurify';
import { applyPatch, type Message, type TranscriptPatch, type TranscriptState } from '../src/transcript';
import type { Dialog } from '../src/protocol';

interface VsCodeApi {
  postMessage(msg: unknown): void;
  getState(): ViewState | undefined;
  setState(s: ViewState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

export interface ViewState {
  transcript: TranscriptState;
  dialogs: Dialog[];
  currentDialog?: string;
  context?: string;
  draft?: string;
  includeContext?: boolean;
}

const vscode = acquireVsCodeApi();
// html: false escapes any HTML in the answer; DOMPurify cleans what markdown-it made anyway.
const md = new MarkdownIt({ html: false, linkify: true, breaks: false });

let state: ViewState = vscode.getState() ?? { transcript: { messages: [], busy: false }, dialogs: [], includeContext: true };

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const messagesEl = $('messages');
const input = $<HTMLTextAreaElement>('input');
const sendBtn = $<HTMLButtonElement>('send');
const stopBtn = $<HTMLButtonElement>('stop');
const busyEl = $('busy');
const select = $<HTMLSelectElement>('dialog-select');
const toggle = $<HTMLInputElement>('context-toggle');
const chip = $('context-chip');

function markdown(text: string): string {
  return DOMPurify.sanitize(md.render(text), { USE_PROFILES: { html: true } });
}

function el(tag: string, cls?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function renderMessage(m: Message): HTMLElement {
  const box = el('div', `message ${m.role}`);
  if (m.role === 'user') {
    if (m.context) box.appendChild(el('span', 'chip', `@${m.context}`));
    box.appendChild(el('div', 'text', m.text));
    return box;
  }
  if (m.reasoning) {
    const d = el('details', 'reasoning') as HTMLDetailsElement;
    d.appendChild(el('summary', undefined, 'Reasoning'));
    d.appendChild(el('div', 'reasoning-text', m.reasoning));
    box.appendChild(d);
  }
  for (const t of m.tools) {
    const mark = t.status === 'running' ? '…' : t.status === 'error' ? '✗' : '✓';
    box.appendChild(el('div', `tool ${t.status}`, `⚙ ${t.name}${t.detail ? ' ' + t.detail : ''} ${mark}`));
  }
  if (m.text) {
    const body = el('div', 'markdown');
    body.innerHTML = markdown(m.text);
    box.appendChild(body);
  }
  for (const c of m.changes) {
    const line = el('div', 'change');
    const a = el('a', undefined, `${c.kind} ${c.path}`) as HTMLAnchorElement;
    a.href = '#';
    a.dataset.review = c.path;
    line.append(c.appliedUpstream ? '✎ written by the server: ' : '✎ proposed: ', a);
    box.appendChild(line);
  }
  if (m.citations.length) {
    const list = el('div', 'citations');
    list.appendChild(el('span', 'label', 'Sources: '));
    for (const c of m.citations) {
      const a = el('a', 'citation', c.title || c.file || c.url || 'source') as HTMLAnchorElement;
      a.href = '#';
      if (c.url) a.dataset.url = c.url;
      if (c.file) a.dataset.file = c.file;
      a.title = c.snippet ?? c.url ?? c.file ?? '';
      list.appendChild(a);
    }
    box.appendChild(list);
  }
  for (const n of m.notices) box.appendChild(el('div', 'notice', n));
  for (const e of m.errors) box.appendChild(el('div', 'error', e));
  if (m.outcome && m.outcome !== 'completed') box.appendChild(el('div', 'outcome', `(${m.outcome})`));
  return box;
}

/** A dialog's title, else when it started (ids are long hex strings that say nothing). */
function dialogLabel(d: Partial<Dialog>): string {
  if (d.title) return d.title;
  if (d.createdAt) {
    const t = new Date(d.createdAt);
    if (!isNaN(t.getTime())) return `dialog of ${t.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })}`;
  }
  return d.id ? `dialog ${d.id.slice(0, 8)}` : 'new dialog';
}

/** The rendered messages, one element per message of state.transcript. */
let rendered: HTMLElement[] = [];

function render(): void {
  const t = state.transcript;
  const atBottom = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 40;
  rendered = t.messages.map(renderMessage);
  messagesEl.replaceChildren(...rendered);
  if (t.messages.length === 0) messagesEl.appendChild(el('div', 'empty', 'Ask about this workspace, or ask for a change: it waits in Changes for your review.'));
  if (atBottom) messagesEl.scrollTop = messagesEl.scrollHeight;
  renderChrome();
  vscode.setState({ ...state, draft: input.value });
}

/**
 * Applies what changed while a turn streams: only the messages it names are rendered again,
 * the others keep their elements (and whatever the user opened or selected in them).
 */
function renderPatch(p: TranscriptPatch): void {
  const t = state.transcript;
  const atBottom = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 40;
  const changed = applyPatch(t, p);
  for (const e of rendered.splice(t.messages.length)) e.remove();
  if (t.messages.length > 0) messagesEl.querySelector(':scope > .empty')?.remove();
  for (const i of changed) {
    const e = renderMessage(t.messages[i]);
    if (rendered[i]) rendered[i].replaceWith(e);
    else messagesEl.appendChild(e);
    rendered[i] = e;
  }
  if (atBottom) messagesEl.scrollTop = messagesEl.scrollHeight;
  renderChrome();
  saveSoon();
}

let saveTimer: ReturnType<typeof setTimeout> | undefined;

/** Saves the state for when the view comes back, at most a few times a second while a turn streams. */
function saveSoon(): void {
  if (saveTimer) return;
  saveTimer = setTimeout(() => {
    saveTimer = undefined;
    vscode.setState({ ...state, draft: input.value });
  }, 200);
}

/** The parts around the messages: the dialog picker, the busy state, the context chip. */
function renderChrome(): void {
  const t = state.transcript;
  select.replaceChildren();
  const dialogs = state.dialogs.length ? state.dialogs : [{ id: '', title: 'new dialog' }];
  for (const d of dialogs) {
    const o = document.createElement('option');
    o.value = d.id;
    o.textContent = dialogLabel(d);
    o.selected = d.id === (state.currentDialog ?? t.dialogId);
    select.appendChild(o);
  }
  busyEl.hidden = !t.busy;
  document.body.classList.toggle('busy', t.busy);
  stopBtn.disabled = !t.busy;
  sendBtn.disabled = t.busy;
  chip.textContent = state.context ? `@${state.context}` : 'no file open';
  toggle.checked = state.includeContext !== false;
  toggle.disabled = !state.context;
}

function send(): void {
  const text = input.value.trim();
  if (!text || state.transcript.busy) return;
  vscode.postMessage({ type: 'send', text, includeContext: toggle.checked && !!state.context });
  input.value = '';
  state.draft = '';
}

input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
input.addEventListener('input', () => vscode.setState({ ...state, draft: input.value }));
sendBtn.addEventListener('click', send);
stopBtn.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
toggle.addEventListener('change', () => {
  state.includeContext = toggle.checked;
  vscode.setState({ ...state, draft: input.value });
});
select.addEventListener('change', () => vscode.postMessage({ type: 'switchDialog', dialogId: select.value }));
$('dialog-new').addEventListener('click', () => vscode.postMessage({ type: 'newDialog' }));
$('dialog-rename').addEventListener('click', () => vscode.postMessage({ type: 'renameDialog', dialogId: select.value }));
$('dialog-delete').addEventListener('click', () => vscode.postMessage({ type: 'deleteDialog', dialogId: select.value }));
messagesEl.addEventListener('click', (e) => {
  const a = (e.target as HTMLElement).closest('a');
  if (!a) return;
  e.preventDefault();
  if (a.dataset.review) vscode.postMessage({ type: 'review', path: a.dataset.review });
  else if (a.dataset.file) vscode.postMessage({ type: 'open', file: a.dataset.file });
  else if (a.dataset.url) vscode.postMessage({ type: 'open', url: a.dataset.url });
  else if (a.getAttribute('href')) vscode.postMessage({ type: 'open', url: a.getAttribute('href') });
});

window.addEventListener('message', (e: MessageEvent) => {
  const msg = e.data;
  if (msg?.type === 'state') {
    state = { ...state, ...msg.state };
    render();
  } else if (msg?.type === 'patch') {
    state = { ...state, context: msg.context, currentDialog: msg.currentDialog };
    renderPatch(msg.patch as TranscriptPatch);
  } else if (msg?.type === 'prefill') {
    input.value = msg.text;
    input.focus();
  } else if (msg?.type === 'focus') {
    input.focus();
  }
});

input.value = state.draft ?? '';
render();
vscode.postMessage({ type: 'ready' });
