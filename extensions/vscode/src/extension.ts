// The VS Code front of smith: starts `smith serve` through vscode-languageclient (so smith sees
// unsaved editor text and edits land through workspace/applyEdit, undoable with Ctrl+Z) and
// shows what SmithSession knows: the chat view, the Changes tree, native diffs with per-hunk
// Accept/Reject, the status bar. Decisions are the engine's to carry out; nothing here edits a
// file or computes a hunk.
import * as vscode from 'vscode';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { CloseAction, ErrorAction, LanguageClient, State, type ErrorHandler, type LanguageClientOptions, type ServerOptions, type StdioOptions } from 'vscode-languageclient/node';
import { SmithSession, REVIEWABLE, hunkLine, errorMessage } from './session';
import { ErrorCodes, type Change, type Dialog, type Hunk, type Status } from './protocol';
import { advise, adviseStart, type Action, type Advice } from './errors';
import { chatHtml, nonce } from './chatHtml';
import { findSmith, INSTALL_COMMAND } from './findSmith';
import { TranscriptSync, type Transcript } from './transcript';
import { StartMessages } from './startMessages';

const RESULT_SCHEME = 'smith-result';

let ext: SmithExtension | undefined;

export async function activate(ctx: vscode.ExtensionContext): Promise<void> {
  ext = new SmithExtension(ctx);
  await ext.start();
}

export async function deactivate(): Promise<void> {
  await ext?.stop();
}

/**
 * The language client, except for what it says about a start that failed: the extension says
 * that itself, once, in the output and in a notification with the buttons that help.
 *
 * vscode-languageclient 11 reports a failed start on its own: start() shows "couldn't create
 * connection to server" with 'force' (no option turns it off); after a failed initialize it
 * calls stop() on a client still starting, whose shutdown throws "Client is not running and
 * can't be stopped", logged with its stack as "Stopping server failed"; that shutdown then kills
 * the server 2 s later ("Server process exited with signal SIGKILL"), before a serve that refused
 * has seen its editor let go. To a user who opens the output to learn what to do, all of it reads
 * as a crash of the extension. Here a client that never started is stopped by closing the
 * server's stdin, which a serve that refused waits for to exit; what the client then logs about
 * the failed start is information, not an error. A client that started logs as the library does.
 */
class SmithClient extends LanguageClient {
  private quiet = false;
  /** The start failed: what the client logs from now on is about a server that never ran. */
  private failed = false;
  /** Settles when the server of a start that failed has ended (or could not be waited for). */
  private ended: Promise<void> | undefined;

  /** start(), its failure left for the caller to tell. */
  async startQuietly(): Promise<void> {
    this.quiet = true;
    this.failed = false;
    try {
      await this.start();
    } catch (err) {
      this.failed = true;
      // What the client logs about the server's end ("Server process exited with code 2") comes
      // before the caller's account, which is then the last thing in the output, where the
      // Output view opens.
      await this.ended;
      throw err;
    } finally {
      this.quiet = false;
    }
  }

  override error(message: string, data?: unknown, showNotification: boolean | 'force' = true): void {
    if (this.quiet && showNotification === 'force') {
      // start()'s own report of its failure, which the caller says plainly: kept, with the
      // error's details (a stack for some), at the debug level.
      super.debug(message, data, false);
    } else if (this.failed) {
      // The end of a server that did not start ("Server process exited with code 2"): expected.
      super.info(message, data, false);
    } else {
      super.error(message, data, this.quiet ? false : showNotification);
    }
  }

  override async stop(timeout = 2000): Promise<void> {
    if (this.state !== State.Starting && this.state !== State.StartFailed) return super.stop(timeout);
    // A client that never started (the library's stop after a failed initialize, or ours):
    // close the server's stdin so that it ends on its own, and end it if it does not.
    this.failed = true;
    const server = this.serverProcess;
    if (!server || server.exitCode !== null || server.signalCode !== null || this.ended) return;
    this.ended = new Promise((resolve) => {
      const kill = setTimeout(() => server.kill(), timeout);
      const giveUp = setTimeout(resolve, 2 * timeout);
      // 'close': the process has ended and its stdout, the connection, is closed; the client's
      // handlers of both have run by the next turn.
      server.once('close', () => {
        clearTimeout(kill);
        clearTimeout(giveUp);
        setImmediate(resolve);
      });
    });
    server.stdin?.end();
  }
}

/**
 * serve's stderr (log/slog text: "time=… level=WARN msg=…") in the output channel at the level
 * each line gives, rather than every line as an error (the language client's default); a line
 * without a level (a panic's trace) stays an error.
 */
const serveStdio: Required<StdioOptions> = {
  stdout: (input, channel) => lines(input, (l) => channel.info(l)),
  stderr: (input, channel) => lines(input, (l) => {
    switch (/(?:^|\s)level=(DEBUG|INFO|WARN|ERROR)\b/.exec(l)?.[1]) {
      case 'DEBUG': channel.debug(l); break;
      case 'INFO': channel.info(l); break;
      case 'WARN': channel.warn(l); break;
      default: channel.error(l);
    }
  }),
};

function lines(input: Readable, each: (line: string) => void): void {
  createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', each);
}

/** What a diff shows for one change: the engine's preview of its pending hunks. */
interface Review {
  changeId: string;
  result: string;
  original: string;
  hunks: Hunk[];
}

class SmithExtension {
  private client: LanguageClient | undefined;
  session: SmithSession | undefined;
  readonly output: vscode.LogOutputChannel = vscode.window.createOutputChannel('smith', { log: true });
  private readonly statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  private status: Status | undefined;
  private statusError: string | undefined;
  private busy = false;
  /** What the upstream's stream turned out to be in the last turn (status says 'auto' before one). */
  private lastDialect: string | undefined;
  private turn: vscode.CancellationTokenSource | undefined;
  private dialogs: Dialog[] = [];
  private lastEditor: vscode.TextEditor | undefined;
  private readonly chat: ChatView;
  private readonly tree: ChangesTree;
  private readonly reviews = new Map<string, Review>();
  private readonly resultChanged = new vscode.EventEmitter<vscode.Uri>();
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  private sessionDisposables: vscode.Disposable[] = [];
  private statusTimer: NodeJS.Timeout | undefined;

  constructor(private readonly ctx: vscode.ExtensionContext) {
    this.chat = new ChatView(ctx.extensionUri, this);
    this.tree = new ChangesTree(this);
    this.lastEditor = vscode.window.activeTextEditor;
    const treeView = vscode.window.createTreeView('smith.changes', { treeDataProvider: this.tree, showCollapseAll: true });
    this.tree.view = treeView;
    this.statusItem.command = 'smith.showOutput';
    this.statusItem.show();
    this.renderStatus();
    ctx.subscriptions.push(
      this.output,
      this.statusItem,
      treeView,
      vscode.window.registerWebviewViewProvider('smith.chat', this.chat),
      vscode.workspace.registerTextDocumentContentProvider(RESULT_SCHEME, {
        onDidChange: this.resultChanged.event,
        provideTextDocumentContent: (uri) => this.resultText(uri),
      }),
      vscode.languages.registerCodeLensProvider({ scheme: RESULT_SCHEME }, {
        onDidChangeCodeLenses: this.lensesChanged.event,
        provideCodeLenses: (doc) => this.codeLenses(doc),
      }),
      vscode.window.onDidChangeActiveTextEditor((e) => {
        if (e && e.document.uri.scheme === 'file') this.lastEditor = e;
        this.chat.post();
      }),
      vscode.window.onDidChangeTextEditorSelection((e) => {
        if (e.textEditor.document.uri.scheme === 'file') {
          this.lastEditor = e.textEditor;
          this.chat.postSoon();
        }
      }),
      vscode.workspace.onDidChangeConfiguration(async (e) => {
        if (e.affectsConfiguration('smith')) await this.restart();
      }),
    );
    const cmd = (id: string, fn: (...args: any[]) => unknown) => ctx.subscriptions.push(vscode.commands.registerCommand(id, fn));
    cmd('smith.openChat', () => this.focusChat());
    cmd('smith.explainSelection', () => this.explainSelection());
    cmd('smith.reviewChanges', () => this.reviewChanges());
    cmd('smith.undoLast', () => this.undo());
    cmd('smith.undoChange', (arg) => this.undo(changeIdOf(arg)));
    cmd('smith.showOutput', () => this.output.show(true));
    cmd('smith.restart', () => this.restart());
    cmd('smith.refreshChanges', () => this.refreshChanges());
    cmd('smith.openChange', (arg) => this.openChange(changeIdOf(arg)));
    cmd('smith.acceptHunk', (a, b) => this.decide('apply', a, b));
    cmd('smith.rejectHunk', (a, b) => this.decide('reject', a, b));
    cmd('smith.acceptAll', (arg) => this.decideAll('apply', arg));
    cmd('smith.rejectAll', (arg) => this.decideAll('reject', arg));
    cmd('smith.approveSession', (arg) => this.sessionAction('approve', arg));
    cmd('smith.resetSession', (arg) => this.sessionAction('reset', arg));
  }

  // ---- lifecycle ----

  async start(): Promise<void> {
    const cfg = vscode.workspace.getConfiguration('smith');
    const setting = cfg.get<string>('path', 'smith');
    const bin = findSmith(setting);
    if (!bin) {
      this.statusError = 'smith is not installed';
      this.renderStatus();
      // Not awaited, here and for a failed start below: activation, and with it every smith
      // command (Smith: Show output among them), would wait until the notification is answered.
      void vscode.window.showErrorMessage(
        `smith: the smith binary was not found (smith.path is "${setting}"${setting.includes('/') ? '' : ', looked up on PATH'}). Install it from a checkout of the smith repository with \`${INSTALL_COMMAND}\` (with $(go env GOPATH)/bin on PATH), then run "Smith: Restart smith serve" or set smith.path.`,
        'Copy install command', 'Open settings').then(async (pick) => {
        if (pick === 'Copy install command') await vscode.env.clipboard.writeText(INSTALL_COMMAND);
        if (pick === 'Open settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'smith.path');
      });
      return;
    }
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    // No `transport`: TransportKind.stdio would add a --stdio argument that smith serve does not take.
    const serverOptions: ServerOptions = { command: bin, args: ['serve'], options: { cwd: folder } };
    const upstream = cfg.get<string>('upstream', '').trim();
    const init: Record<string, unknown> = { autoApply: cfg.get<string>('applyMode', 'review') === 'auto' };
    if (upstream) init.upstream = upstream;
    // A serve that refused to start (initialize answered with why, such as a state folder it
    // cannot use) is not restarted: it would refuse again, and the user would get the same
    // notification five times and "crashed 5 times". Once it has started, a serve that ends is
    // restarted as the client does by default. Until then the connection's errors are only
    // logged: the failed start is said once, by the notification below.
    let running = false;
    let defaults: ErrorHandler | undefined;
    const errorHandler: ErrorHandler = {
      error: (e, m, n) => running ? defaults!.error(e, m, n) : { action: ErrorAction.Continue, handled: true },
      closed: () => running ? defaults!.closed() : { action: CloseAction.DoNotRestart, handled: true, message: 'smith serve has ended; it is not restarted, since it did not start.' },
    };
    const startMessages = new StartMessages();
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.output,
      initializationOptions: init,
      errorHandler,
      // The failure is said once, by the notification below, with the buttons that help.
      initializationFailedHandler: () => false,
      // serve's window/showMessage saying why it cannot start waits for initialize's answer.
      connectionOptions: { messageStrategy: startMessages },
      stdioOptions: serveStdio,
    };
    this.output.appendLine(`smith: starting ${bin} serve in ${folder ?? '(no folder)'}`);
    const client = new SmithClient('smith', 'smith', serverOptions, clientOptions);
    defaults = client.createDefaultErrorHandler();
    client.onDidChangeState((e) => { if (e.newState === State.Starting) startMessages.starting(); });
    this.client = client;
    try {
      await client.startQuietly();
      running = true;
    } catch (err) {
      // A start that a restart meanwhile stopped (a setting changed) has nothing to say.
      if (this.client !== client) return;
      // What the user finds on Show output: the reason (serve's names the path, the setting it
      // came from and the fix) and what to do after the fix, as the one error of this start.
      const reason = errorMessage(err);
      for (const said of startMessages.takeKept()) {
        if (!said.includes(reason)) this.output.info(`smith serve said: ${said}`);
      }
      this.output.error(`smith serve could not start: ${reason}`);
      this.output.info('Once that is fixed, click Retry on the notification or run "Smith: Restart smith serve".');
      this.statusError = 'smith serve did not start';
      this.renderStatus();
      void this.show(adviseStart(err), () => this.restart(), false);
      return;
    }
    const session = new SmithSession(client);
    this.session = session;
    this.statusError = undefined;
    this.sessionDisposables = [
      session.onTranscript.on(() => this.chat.postSoon()),
      session.onChanges.on(() => this.changesUpdated()),
      session.onBusy.on((b) => { this.busy = b; this.renderStatus(); }),
    ];
    await this.refreshStatus();
    if (this.status?.currentDialog) {
      await session.selectDialog(this.status.currentDialog).catch(() => undefined);
    }
    await this.refreshDialogs();
    await this.refreshChanges();
    this.statusTimer = setInterval(() => void this.refreshStatus(), 30_000);
  }

  async stop(): Promise<void> {
    if (this.statusTimer) clearInterval(this.statusTimer);
    for (const d of this.sessionDisposables) d.dispose();
    this.session?.dispose();
    this.session = undefined;
    const c = this.client;
    this.client = undefined;
    if (c) await c.stop().catch(() => undefined);
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  private requireSession(): SmithSession | undefined {
    if (!this.session) {
      void this.notify('this command', new Error(this.statusError ?? 'smith serve is not running'), () => this.restart());
    }
    return this.session;
  }

  /** An error notification with the buttons that help; Retry runs `retry`. */
  async notify(what: string, err: unknown, retry?: () => unknown): Promise<void> {
    await this.show(advise(what, err), retry);
  }

  /** The advice as an error notification (and in the output, unless said there); Retry runs `retry`. */
  private async show(a: Advice, retry?: () => unknown, log = true): Promise<void> {
    if (log) this.output.appendLine(a.message);
    const actions = a.actions.filter((x) => x !== 'Retry' || retry);
    const pick = await vscode.window.showErrorMessage(a.message, ...actions);
    await this.runAction(pick as Action | undefined, retry);
  }

  private async runAction(pick: Action | undefined, retry?: () => unknown): Promise<void> {
    switch (pick) {
      case 'Retry': await retry?.(); break;
      case 'Open settings': await vscode.commands.executeCommand('workbench.action.openSettings', 'smith.'); break;
      case 'Show output': this.output.show(true); break;
      case 'Review changes': await this.reviewChanges(); break;
      case 'Stop': this.turn?.cancel(); break;
    }
  }

  // ---- status bar ----

  async refreshStatus(): Promise<void> {
    if (!this.session) return;
    try {
      this.status = await this.session.status();
    } catch (err) {
      this.output.appendLine(`smith: status: ${errorMessage(err)}`);
    }
    this.renderStatus();
  }

  private renderStatus(): void {
    const s = this.status;
    const item = this.statusItem;
    if (this.statusError) {
      item.text = `$(error) smith`;
      item.tooltip = `smith: ${this.statusError}. Click for the output.`;
    } else if (this.busy) {
      item.text = `$(sync~spin) smith: working`;
      item.tooltip = 'A turn is running; Stop it in the chat view.';
    } else if (!s) {
      item.text = '$(loading~spin) smith';
      item.tooltip = 'smith serve is starting';
    } else if (!s.reachable) {
      item.text = '$(debug-disconnect) smith: unreachable';
      item.tooltip = `The chat server ${s.upstream || '(none configured)'} is unreachable${s.error ? ': ' + s.error : ''}. Start it or set smith.upstream.`;
    } else {
      const pending = this.session?.all().filter((c) => c.status === 'pending').length ?? s.pendingChanges;
      const dialect = this.lastDialect ?? s.dialect;
      item.text = `$(check) smith: ${dialect}${pending ? ` · ${pending} pending` : ''}`;
      item.tooltip = `Upstream ${s.upstream} (${dialect}) reachable. Workspace ${s.workspace}. Click for the output.`;
    }
  }

  // ---- chat ----

  /** The chat view's state: the transcript, dialogs and the context that would be sent. */
  /** The transcript the chat view shows, when smith runs. */
  transcript(): Transcript | undefined {
    return this.session?.transcript;
  }

  viewState(): object {
    const t = this.session?.transcript.state ?? { messages: [], busy: false };
    return { transcript: t, dialogs: this.dialogs, currentDialog: t.dialogId ?? this.status?.currentDialog, context: this.contextLabel() };
  }

  private contextEditor(): vscode.TextEditor | undefined {
    const e = vscode.window.activeTextEditor;
    if (e && e.document.uri.scheme === 'file') return e;
    const last = this.lastEditor;
    return last && vscode.workspace.textDocuments.includes(last.document) ? last : undefined;
  }

  private contextLabel(): string | undefined {
    const e = this.contextEditor();
    if (!e) return undefined;
    const name = vscode.workspace.asRelativePath(e.document.uri, false);
    const sel = e.selection;
    if (sel.isEmpty) return name;
    return `${name}:${sel.start.line + 1}-${sel.end.line + 1}`;
  }

  async send(text: string, includeContext: boolean): Promise<void> {
    const session = this.requireSession();
    if (!session) return;
    const e = includeContext ? this.contextEditor() : undefined;
    const context = e ? {
      uri: e.document.uri.toString(),
      selection: e.selection.isEmpty ? undefined : {
        start: { line: e.selection.start.line, character: e.selection.start.character },
        end: { line: e.selection.end.line, character: e.selection.end.character },
      },
    } : undefined;
    const label = e ? this.contextLabel() : undefined;
    const dialogId = session.transcript.state.dialogId;
    this.turn = new vscode.CancellationTokenSource();
    try {
      const res = await session.chat({ message: text, dialogId, context }, label, this.turn.token);
      if (res.dialect) this.lastDialect = res.protocol ? `${res.dialect} ${res.protocol}` : res.dialect;
      if (res.outcome === 'error' || res.outcome === 'interrupted') {
        const why = session.transcript.state.messages.at(-1)?.errors.at(-1) ?? res.outcome;
        void this.notify('chat', new Error(`the turn ended ${res.outcome}: ${why}`), () => this.send(text, includeContext));
      }
      const fresh = res.changes.map((id) => session.get(id)).filter((c): c is Change => !!c);
      if (fresh.some((c) => c.status === 'pending')) {
        await vscode.commands.executeCommand('smith.changes.focus');
      }
    } catch (err) {
      void this.notify('chat', err, () => this.send(text, includeContext));
    } finally {
      this.turn.dispose();
      this.turn = undefined;
      await this.refreshStatus();
      await this.refreshDialogs();
    }
  }

  stopTurn(): void {
    this.turn?.cancel();
  }

  async refreshDialogs(): Promise<void> {
    if (!this.session) return;
    try {
      this.dialogs = await this.session.dialogs();
    } catch {
      this.dialogs = [];
    }
    this.chat.post();
    this.tree.refresh(); // its dialog labels are the titles
  }

  async dialogAction(kind: 'new' | 'switch' | 'rename' | 'delete', dialogId?: string): Promise<void> {
    const session = this.requireSession();
    if (!session) return;
    try {
      if (kind === 'new') {
        await session.newDialog();
      } else if (kind === 'switch' && dialogId) {
        await session.selectDialog(dialogId);
      } else if (kind === 'rename' && dialogId) {
        const current = this.dialogs.find((d) => d.id === dialogId);
        const title = await vscode.window.showInputBox({ prompt: 'New title of the dialog', value: current?.title ?? '' });
        if (!title) return;
        await session.renameDialog(dialogId, title);
      } else if (kind === 'delete' && dialogId) {
        const current = this.dialogs.find((d) => d.id === dialogId);
        const ok = await vscode.window.showWarningMessage(`Delete the dialog "${current?.title || dialogId}"?`, { modal: true }, 'Delete');
        if (ok !== 'Delete') return;
        await session.deleteDialog(dialogId);
      }
    } catch (err) {
      await this.notify(`${kind} dialog`, err);
    }
    await this.refreshDialogs();
    await this.refreshChanges();
  }

  async focusChat(): Promise<void> {
    await vscode.commands.executeCommand('smith.chat.focus');
    this.chat.focusInput();
  }

  async explainSelection(): Promise<void> {
    const e = this.contextEditor();
    if (!e || e.selection.isEmpty) {
      void vscode.window.showInformationMessage('smith: select some code in an editor first, then run "Smith: Explain selection".');
      return;
    }
    await vscode.commands.executeCommand('smith.chat.focus');
    await this.send('Explain the selected code.', true);
  }

  async openLink(msg: { file?: string; url?: string }): Promise<void> {
    if (msg.url && /^(https?|mailto):/i.test(msg.url)) {
      await vscode.env.openExternal(vscode.Uri.parse(msg.url));
      return;
    }
    const file = msg.file ?? msg.url;
    if (!file) return;
    const root = this.status?.workspace ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
    const [p, line] = file.split(/:(?=\d+$)/);
    const uri = vscode.Uri.file(path.isAbsolute(p) ? p : path.join(root, p));
    const doc = await vscode.window.showTextDocument(uri, { preview: true });
    if (line) {
      const pos = new vscode.Position(Math.max(Number(line) - 1, 0), 0);
      doc.selection = new vscode.Selection(pos, pos);
      doc.revealRange(new vscode.Range(pos, pos));
    }
  }

  // ---- changes ----

  async refreshChanges(): Promise<void> {
    if (!this.session) return;
    try {
      await this.session.refreshChanges();
    } catch (err) {
      this.output.appendLine(`smith: listing changes: ${errorMessage(err)}`);
    }
  }

  private changesUpdated(): void {
    this.tree.refresh();
    this.renderStatus();
    // Open diffs follow the engine: reload the preview of every change shown.
    for (const id of this.reviews.keys()) void this.loadReview(id);
  }

  private fileUri(c: Change): vscode.Uri {
    const root = this.status?.workspace ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
    return vscode.Uri.file(path.join(root, c.path));
  }

  private resultUri(c: Change, side: 'result' | 'original'): vscode.Uri {
    return vscode.Uri.from({ scheme: RESULT_SCHEME, path: '/' + c.path, query: `change=${encodeURIComponent(c.id)}&side=${side}` });
  }

  private static query(uri: vscode.Uri): { change: string; side: string } {
    const q = new URLSearchParams(uri.query);
    return { change: q.get('change') ?? '', side: q.get('side') ?? 'result' };
  }

  private resultText(uri: vscode.Uri): string {
    const { change, side } = SmithExtension.query(uri);
    const r = this.reviews.get(change);
    if (!r) return '';
    return side === 'original' ? r.original : r.result;
  }

  /** Asks the engine for the preview of a change's pending hunks (what the diff's right side shows). */
  async loadReview(changeId: string): Promise<Review | undefined> {
    const session = this.session;
    const c = session?.get(changeId);
    if (!session || !c) return undefined;
    const pending = c.hunks.filter((h) => h.status === 'pending').map((h) => h.id);
    let review: Review;
    try {
      if (pending.length > 0) {
        const p = await session.preview(changeId, pending);
        review = { changeId, result: p.result, original: p.original, hunks: p.hunks ?? [] };
      } else {
        const p = await session.preview(changeId);
        // Nothing left to decide: the right side is the file as it is now.
        let now = p.result;
        if (c.kind !== 'delete') {
          try { now = (await vscode.workspace.openTextDocument(this.fileUri(c))).getText(); } catch { /* deleted */ }
        }
        review = { changeId, result: now, original: p.original, hunks: [] };
      }
    } catch (err) {
      this.output.appendLine(`smith: preview of ${changeId}: ${errorMessage(err)}`);
      return undefined;
    }
    this.reviews.set(changeId, review);
    this.resultChanged.fire(this.resultUri(c, 'result'));
    this.resultChanged.fire(this.resultUri(c, 'original'));
    this.lensesChanged.fire();
    return review;
  }

  async openChange(changeId: string | undefined): Promise<void> {
    const session = this.requireSession();
    if (!session || !changeId) return;
    const c = session.get(changeId);
    if (!c) return;
    await this.loadReview(changeId);
    const written = c.status === 'applied' || c.status === 'appliedUpstream' || c.status === 'undone' || c.status === 'rejected';
    // Undecided: the file as it is now against the engine's result. Written: what it was against the file.
    const left = written || c.kind === 'create' ? this.resultUri(c, 'original') : this.fileUri(c);
    const right = written ? this.fileUri(c) : this.resultUri(c, 'result');
    const title = `${path.basename(c.path)} ↔ smith ${c.id} (${c.status})`;
    await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: false });
  }

  private codeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const { change, side } = SmithExtension.query(doc.uri);
    if (side !== 'result') return [];
    const c = this.session?.get(change);
    const r = this.reviews.get(change);
    if (!c || !r) return [];
    const top = new vscode.Range(0, 0, 0, 0);
    const lenses: vscode.CodeLens[] = [];
    const pending = r.hunks.filter((h) => h.status === 'pending');
    if (pending.length > 1) {
      lenses.push(new vscode.CodeLens(top, { title: `$(check-all) Accept all ${pending.length}`, command: 'smith.acceptAll', arguments: [c.id] }));
      lenses.push(new vscode.CodeLens(top, { title: '$(clear-all) Reject all', command: 'smith.rejectAll', arguments: [c.id] }));
    }
    for (const h of c.hunks) {
      if (h.status === 'conflict') {
        lenses.push(new vscode.CodeLens(top, { title: `$(warning) hunk ${c.hunks.indexOf(h) + 1}: conflict — ${h.reason ?? c.reason ?? 'the file changed'}`, command: '' }));
      }
    }
    if (c.status === 'conflict' && c.reason) {
      lenses.push(new vscode.CodeLens(top, { title: `$(warning) conflict: ${c.reason}`, command: '' }));
    }
    for (const h of pending) {
      const n = c.hunks.findIndex((x) => x.id === h.id) + 1;
      const line = Math.min(hunkLine(h), Math.max(doc.lineCount - 1, 0));
      const range = new vscode.Range(line, 0, line, 0);
      lenses.push(new vscode.CodeLens(range, { title: `$(check) Accept hunk ${n}/${c.hunks.length}`, command: 'smith.acceptHunk', arguments: [c.id, h.id] }));
      lenses.push(new vscode.CodeLens(range, { title: `$(close) Reject hunk ${n}/${c.hunks.length}`, command: 'smith.rejectHunk', arguments: [c.id, h.id] }));
    }
    return lenses;
  }

  /** Accept or reject one hunk: from a CodeLens (changeId, hunkId) or a tree item. */
  private async decide(kind: 'apply' | 'reject', a: unknown, b: unknown): Promise<void> {
    let changeId: string | undefined;
    let hunkId: string | undefined;
    if (a instanceof HunkItem) {
      changeId = a.change.id;
      hunkId = a.hunk.id;
    } else if (typeof a === 'string' && typeof b === 'string') {
      changeId = a;
      hunkId = b;
    }
    if (!changeId || !hunkId) return;
    await this.runDecision(kind, changeId, [hunkId]);
  }

  private async decideAll(kind: 'apply' | 'reject', arg: unknown): Promise<void> {
    let changeId = changeIdOf(arg);
    if (!changeId) {
      // From the diff editor's toolbar: the change whose result is shown.
      const uri = vscode.window.activeTextEditor?.document.uri;
      if (uri?.scheme === RESULT_SCHEME) changeId = SmithExtension.query(uri).change;
    }
    if (!changeId) return;
    await this.runDecision(kind, changeId, undefined);
  }

  private async runDecision(kind: 'apply' | 'reject', changeId: string, hunks: string[] | undefined): Promise<void> {
    const session = this.requireSession();
    if (!session) return;
    try {
      const c = kind === 'apply' ? await session.apply(changeId, hunks) : await session.reject(changeId, hunks);
      if (c.status === 'conflict') {
        void this.notify(`${kind} ${c.path}`, { code: ErrorCodes.Conflict, message: c.reason ?? 'the file changed' });
      }
    } catch (err) {
      await this.refreshChanges();
      void this.notify(`${kind === 'apply' ? 'accept' : 'reject'} ${session.get(changeId)?.path ?? changeId}`, err, () => this.runDecision(kind, changeId, hunks));
    }
    await this.loadReview(changeId);
    this.tree.refresh();
  }

  async undo(changeId?: string): Promise<void> {
    const session = this.requireSession();
    if (!session) return;
    try {
      const c = await session.undo(changeId);
      await this.loadReview(c.id);
      void vscode.window.showInformationMessage(`smith: undid ${c.id} in ${c.path}.`);
    } catch (err) {
      void this.notify('undo', err, () => this.undo(changeId));
    }
    await this.refreshChanges();
  }

  async reviewChanges(): Promise<void> {
    const session = this.requireSession();
    if (!session) return;
    await this.refreshChanges();
    await vscode.commands.executeCommand('smith.changes.focus');
    const first = session.all().find((c) => c.status === 'pending') ?? session.all().find((c) => REVIEWABLE.has(c.status));
    if (first) await this.openChange(first.id);
    else void vscode.window.showInformationMessage('smith: no changes to review.');
  }

  private async sessionAction(kind: 'approve' | 'reset', arg: unknown): Promise<void> {
    const session = this.requireSession();
    if (!session) return;
    const dialogId = arg instanceof ChangeItem ? arg.change.dialogId : arg instanceof DialogItem ? arg.dialogId : undefined;
    if (kind === 'reset') {
      const ok = await vscode.window.showWarningMessage('Reset the session: the server restores every file it wrote since the last approval.', { modal: true }, 'Reset');
      if (ok !== 'Reset') return;
    }
    try {
      if (kind === 'approve') await session.approveSession(dialogId);
      else await session.resetSession(dialogId);
      void vscode.window.showInformationMessage(`smith: session ${kind === 'approve' ? 'approved' : 'reset'}.`);
    } catch (err) {
      void this.notify(`${kind} session`, err);
    }
    await this.refreshChanges();
  }

  dialogTitle(id: string): string {
    const d = this.dialogs.find((x) => x.id === id);
    if (d?.title) return d.title;
    const t = d?.createdAt ? new Date(d.createdAt) : undefined;
    return t && !isNaN(t.getTime()) ? `dialog of ${t.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })}` : `dialog ${id.slice(0, 8)}`;
  }
}

function changeIdOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  if (arg instanceof ChangeItem) return arg.change.id;
  if (arg instanceof HunkItem) return arg.change.id;
  return undefined;
}

// ---- the chat view ----

class ChatView implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** What the view holds of the transcript; reset by every whole-state post. */
  private readonly sync = new TranscriptSync();

  constructor(private readonly root: vscode.Uri, private readonly ext: SmithExtension) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const w = view.webview;
    w.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(this.root, 'out'), vscode.Uri.joinPath(this.root, 'media')] };
    w.html = chatHtml({
      cspSource: w.cspSource,
      scriptUri: w.asWebviewUri(vscode.Uri.joinPath(this.root, 'out', 'webview.js')).toString(),
      styleUri: w.asWebviewUri(vscode.Uri.joinPath(this.root, 'media', 'chat.css')).toString(),
      nonce: nonce(),
    });
    w.onDidReceiveMessage((m) => this.receive(m));
    view.onDidChangeVisibility(() => { if (view.visible) this.post(); });
    view.onDidDispose(() => { if (this.view === view) this.view = undefined; });
  }

  private async receive(m: any): Promise<void> {
    switch (m?.type) {
      case 'ready': this.post(); break;
      case 'send': await this.ext.send(String(m.text ?? ''), !!m.includeContext); break;
      case 'stop': this.ext.stopTurn(); break;
      case 'newDialog': await this.ext.dialogAction('new'); break;
      case 'switchDialog': if (m.dialogId) await this.ext.dialogAction('switch', m.dialogId); break;
      case 'renameDialog': await this.ext.dialogAction('rename', m.dialogId); break;
      case 'deleteDialog': await this.ext.dialogAction('delete', m.dialogId); break;
      case 'open': await this.ext.openLink(m); break;
      case 'review': await this.ext.reviewChanges(); break;
    }
  }

  /** Sends the whole state now. */
  post(): void {
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    if (!this.view) return;
    const t = this.ext.transcript();
    if (t) this.sync.full(t);
    void this.view.webview.postMessage({ type: 'state', state: this.ext.viewState() });
  }

  /**
   * Sends what changed soon: a burst of streamed deltas becomes one message, and it carries
   * only what the view does not have yet (TranscriptSync), not the whole transcript again.
   */
  postSoon(): void {
    if (!this.timer) this.timer = setTimeout(() => this.flush(), 40);
  }

  private flush(): void {
    this.timer = undefined;
    const t = this.ext.transcript();
    const patch = this.view && t ? this.sync.patch(t) : undefined;
    if (!patch) return this.post();
    const s = this.ext.viewState() as { context?: string; currentDialog?: string };
    void this.view!.webview.postMessage({ type: 'patch', patch, context: s.context, currentDialog: s.currentDialog });
  }

  focusInput(): void {
    void this.view?.webview.postMessage({ type: 'focus' });
  }
}

// ---- the Changes tree ----

class DialogItem extends vscode.TreeItem {
  constructor(readonly dialogId: string, title: string, changes: Change[]) {
    super(title, vscode.TreeItemCollapsibleState.Expanded);
    const pending = changes.filter((c) => c.status === 'pending').length;
    this.description = pending ? `${pending} pending` : `${changes.length} change${changes.length === 1 ? '' : 's'}`;
    this.contextValue = 'dialog';
    this.id = `dialog:${dialogId}`;
    this.iconPath = new vscode.ThemeIcon('comment-discussion');
  }
}

const STATUS_ICON: Record<string, string> = {
  pending: 'diff', applied: 'pass-filled', appliedUpstream: 'cloud-upload', rejected: 'circle-slash',
  conflict: 'warning', stale: 'warning', undone: 'discard',
};

class ChangeItem extends vscode.TreeItem {
  constructor(readonly change: Change) {
    // Changes that wait for a decision show their hunks; decided ones fold away.
    const open = change.status === 'pending' || change.status === 'conflict';
    super(change.path, change.hunks.length === 0 ? vscode.TreeItemCollapsibleState.None
      : open ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
    const label = change.status === 'appliedUpstream' ? 'written by the server' : change.status;
    this.description = `${label} · ${change.kind}${change.hunks.length ? ` · ${change.hunks.length} hunk${change.hunks.length === 1 ? '' : 's'}` : ''}`;
    this.tooltip = new vscode.MarkdownString(`**${change.path}** (${change.id}): ${label}${change.reason ? `\n\n${change.reason}` : ''}`);
    this.contextValue = change.status;
    this.iconPath = new vscode.ThemeIcon(STATUS_ICON[change.status] ?? 'circle-outline');
    this.id = `change:${change.id}`;
    this.command = { command: 'smith.openChange', title: 'Open change', arguments: [change.id] };
  }
}

class HunkItem extends vscode.TreeItem {
  constructor(readonly change: Change, readonly hunk: Hunk, n: number) {
    super(`hunk ${n}/${change.hunks.length}`, vscode.TreeItemCollapsibleState.None);
    const lines = hunk.status === 'applied' || hunk.status === 'appliedUpstream'
      ? `line ${hunk.newStart ?? '?'}` : `line ${hunk.oldStart ?? '?'}`;
    this.description = `${hunk.status} · ${lines}${hunk.match && hunk.match !== 'exact' ? ` · ${hunk.match}` : ''}${hunk.reason ? ` · ${hunk.reason}` : ''}`;
    this.tooltip = new vscode.MarkdownString(`${hunk.reason ? hunk.reason + '\n\n' : ''}\`\`\`diff\n${hunk.text ?? hunk.header}\n\`\`\``);
    this.contextValue = `hunk-${hunk.status}`;
    this.iconPath = new vscode.ThemeIcon(STATUS_ICON[hunk.status] ?? 'circle-outline');
    this.id = `hunk:${change.id}:${hunk.id}`;
    this.command = { command: 'smith.openChange', title: 'Open change', arguments: [change.id] };
  }
}

type Node = DialogItem | ChangeItem | HunkItem;

class ChangesTree implements vscode.TreeDataProvider<Node> {
  view: vscode.TreeView<Node> | undefined;
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly ext: SmithExtension) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(n: Node): vscode.TreeItem {
    return n;
  }

  getChildren(n?: Node): Node[] {
    const session = this.ext.session;
    if (!session) return [];
    if (!n) {
      // '' clears the message; undefined would leave the old one in place.
      if (this.view) this.view.message = session.all().length ? '' : 'No changes yet. Ask for one in the chat.';
      return [...session.byDialog()].map(([id, list]) => new DialogItem(id, this.ext.dialogTitle(id), list));
    }
    if (n instanceof DialogItem) {
      return (session.byDialog().get(n.dialogId) ?? []).map((c) => new ChangeItem(c));
    }
    if (n instanceof ChangeItem) {
      return n.change.hunks.map((h, i) => new HunkItem(n.change, h, i + 1));
    }
    return [];
  }
}
