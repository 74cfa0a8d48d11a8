// SmithSession is everything the extension does with smith serve, with no VS Code API in it:
// the extension runs it over vscode-languageclient's connection, the Node tests over a plain
// vscode-jsonrpc connection to a real smith serve. It keeps the transcript and the known
// changes current from the server's notifications and sends the user's decisions back; it
// never computes a hunk itself (the engine's structured previews say where each one is).
import type { Change, ChatParams, ChatResult, Dialog, EventParams, Preview, Status } from './protocol';
import { Transcript, type TranscriptState } from './transcript';

export interface Disposable { dispose(): void }

/** What both LanguageClient and vscode-jsonrpc's MessageConnection offer. */
export interface Connection {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  sendRequest<R>(method: string, params: any, token?: any): Promise<R>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  onNotification(method: string, handler: (params: any) => void): Disposable;
}

type Listener<T> = (v: T) => void;

class Emitter<T> {
  private listeners = new Set<Listener<T>>();
  on(l: Listener<T>): Disposable {
    this.listeners.add(l);
    return { dispose: () => this.listeners.delete(l) };
  }
  fire(v: T): void {
    for (const l of [...this.listeners]) l(v);
  }
}

/** Statuses that ask the user for a decision. */
export const REVIEWABLE = new Set(['pending', 'conflict', 'stale', 'appliedUpstream']);

/** Where a hunk's lines are in the document shown as the result of a preview (0-based). */
export function hunkLine(h: { newStart?: number; newLines?: number }): number {
  return Math.max((h.newStart ?? 1) - 1, 0);
}

export class SmithSession {
  readonly transcript = new Transcript();
  private changes = new Map<string, Change>();
  /** Transcripts of the dialogs seen in this session, for upstreams that keep no history (v0). */
  private transcripts = new Map<string, TranscriptState>();
  private disposables: Disposable[] = [];

  readonly onTranscript = new Emitter<void>();
  readonly onChanges = new Emitter<Change | undefined>();
  readonly onFileChanged = new Emitter<{ path: string; uri: string }>();
  readonly onBusy = new Emitter<boolean>();

  constructor(private readonly conn: Connection) {
    this.disposables.push(
      conn.onNotification('smith/event', (p: EventParams) => {
        if (this.transcript.apply(p)) this.onTranscript.fire();
      }),
      conn.onNotification('smith/changeUpdated', (p: { change: Change }) => {
        this.upsert(p.change);
      }),
      conn.onNotification('smith/fileChanged', (p: { path: string; uri: string }) => this.onFileChanged.fire(p)),
    );
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  private upsert(c: Change): Change {
    this.changes.set(c.id, c);
    this.onChanges.fire(c);
    return c;
  }

  /** The changes known so far, oldest first (as smith lists them). */
  all(): Change[] {
    return [...this.changes.values()];
  }

  get(id: string): Change | undefined {
    return this.changes.get(id);
  }

  /** Changes grouped by dialog, each group oldest first. */
  byDialog(): Map<string, Change[]> {
    const m = new Map<string, Change[]>();
    for (const c of this.changes.values()) {
      const l = m.get(c.dialogId) ?? [];
      l.push(c);
      m.set(c.dialogId, l);
    }
    return m;
  }

  /**
   * Runs one turn. The transcript fills from the events as they stream; cancelling the token
   * sends $/cancelRequest and the turn still answers (outcome cancelled).
   */
  async chat(params: ChatParams, contextLabel?: string, token?: unknown): Promise<ChatResult> {
    if (params.dialogId && this.transcript.state.dialogId !== params.dialogId) this.transcript.reset(params.dialogId);
    this.transcript.begin(params.message, contextLabel);
    this.onTranscript.fire();
    this.onBusy.fire(true);
    try {
      // No token argument when there is none: vscode-jsonrpc would send [params, undefined].
      const res = await (token === undefined
        ? this.conn.sendRequest<ChatResult>('smith/chat', params)
        : this.conn.sendRequest<ChatResult>('smith/chat', params, token));
      if (!this.transcript.state.dialogId) this.transcript.state.dialogId = res.dialogId;
      this.transcript.end(res.outcome);
      await this.refreshChanges();
      return res;
    } catch (err) {
      this.transcript.end('error', errorMessage(err));
      throw err;
    } finally {
      this.onTranscript.fire();
      this.onBusy.fire(false);
    }
  }

  /** Lists every change again (notifications may be merged or arrive after a response). */
  async refreshChanges(filter: { dialogId?: string; status?: string } = {}): Promise<Change[]> {
    const list = (await this.conn.sendRequest<Change[] | null>('smith/changes', filter)) ?? [];
    if (!filter.dialogId && !filter.status) this.changes.clear();
    for (const c of list) this.changes.set(c.id, c);
    this.onChanges.fire(undefined);
    return list;
  }

  preview(changeId: string, hunks?: string[]): Promise<Preview> {
    return this.conn.sendRequest<Preview>('smith/change/preview', hunks ? { changeId, hunks } : { changeId });
  }

  async apply(changeId: string, hunks?: string[]): Promise<Change> {
    return this.upsert(await this.conn.sendRequest<Change>('smith/change/apply', hunks ? { changeId, hunks } : { changeId }));
  }

  async reject(changeId: string, hunks?: string[]): Promise<Change> {
    return this.upsert(await this.conn.sendRequest<Change>('smith/change/reject', hunks ? { changeId, hunks } : { changeId }));
  }

  async undo(changeId?: string): Promise<Change> {
    return this.upsert(await this.conn.sendRequest<Change>('smith/undo', changeId ? { changeId } : {}));
  }

  status(): Promise<Status> {
    return this.conn.sendRequest<Status>('smith/status', {});
  }

  async dialogs(): Promise<Dialog[]> {
    return (await this.conn.sendRequest<Dialog[] | null>('smith/dialogs', {})) ?? [];
  }

  async newDialog(title?: string): Promise<Dialog> {
    const d = await this.conn.sendRequest<Dialog>('smith/dialog/new', title ? { title } : {});
    this.keep();
    this.transcript.reset(d.id);
    this.onTranscript.fire();
    return d;
  }

  /** Makes a dialog current and loads its history into the transcript. */
  async selectDialog(dialogId: string): Promise<void> {
    await this.conn.sendRequest('smith/dialog/select', { dialogId });
    let page: unknown = null;
    try {
      page = await this.conn.sendRequest('smith/history', { dialogId, limit: 50 });
    } catch {
      // A dialog without history (or an upstream that keeps none) starts empty.
    }
    this.keep();
    this.transcript.loadHistory(dialogId, page);
    const kept = this.transcripts.get(dialogId);
    if (this.transcript.state.messages.length === 0 && kept) this.transcript.state = structuredClone({ ...kept, busy: false });
    this.onTranscript.fire();
  }

  private keep(): void {
    const t = this.transcript.state;
    if (t.dialogId && t.messages.length) this.transcripts.set(t.dialogId, structuredClone(t));
  }

  renameDialog(dialogId: string, title: string): Promise<null> {
    return this.conn.sendRequest('smith/dialog/rename', { dialogId, title });
  }

  async deleteDialog(dialogId: string): Promise<void> {
    await this.conn.sendRequest('smith/dialog/delete', { dialogId });
    this.transcripts.delete(dialogId);
    if (this.transcript.state.dialogId === dialogId) {
      this.transcript.reset();
      this.onTranscript.fire();
    }
  }

  approveSession(dialogId?: string): Promise<unknown> {
    return this.conn.sendRequest('smith/session/approve', dialogId ? { dialogId } : {});
  }

  resetSession(dialogId?: string): Promise<unknown> {
    return this.conn.sendRequest('smith/session/reset', dialogId ? { dialogId } : {});
  }
}

export function errorMessage(err: unknown): string {
  if (err && typeof err === 'object' && 'message' in err) return String((err as { message: unknown }).message);
  return String(err);
}
