// One end-to-end run in a real VS Code workbench: code-server 4.139.1 (VS Code 1.139.1) with the
// packaged .vsix installed, opened in headless Chromium, the extension starting a real
// `smith serve` against a real `smith upstream` (AgentSmithy v0: the agent proposes, the user
// decides). It types in the chat view, opens the change from the Changes tree in the native
// diff editor, accepts hunk 1 and rejects hunk 2 with the CodeLenses, saves, and undoes.
//
// Needs: code-server in its cache (install-code-server.sh, run by this test when missing),
// /usr/bin/chromium, out/smith.vsix (npm run package), $SMITH_BIN or bin/smith.
// SMITH_SCREENSHOTS=DIR writes the screenshots there (scripts/screenshots.sh: docs/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium, type Browser, type Frame, type Locator, type Page } from 'playwright-core';
import { smithBin, startUpstream, workspace, until, MAIN_GO } from '../shared/smith';

const root = path.resolve(__dirname, '../../..');
const vsix = path.join(root, 'out', 'smith.vsix');
const shots = process.env.SMITH_SCREENSHOTS || fs.mkdtempSync(path.join(os.tmpdir(), 'smith-vscode-shots-'));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Lines of the visible text editor (or the modified side of a diff), as Monaco renders them. */
async function editorText(page: Page, selector: string): Promise<string> {
  return page.evaluate((sel) => {
    const lines = [...document.querySelectorAll(`${sel} .view-lines .view-line`)] as HTMLElement[];
    // Monaco positions lines absolutely; order them by their top.
    lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return lines.map((l) => l.textContent!.replace(/\u00a0/g, ' ')).join('\n');
  }, selector);
}

// openQuickInput presses key until the quick input shows: a key pressed
// while the workbench is still settling (or while focus is in no part of
// it) opens nothing, so one press is not enough on a loaded machine.
async function openQuickInput(page: Page, key: string): Promise<Locator> {
  const input = page.locator('.quick-input-widget input');
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press(key);
    try {
      await input.waitFor({ state: 'visible', timeout: 5_000 });
      return input;
    } catch (err) {
      if (attempt === 4) throw err;
      await page.keyboard.press('Escape');
      // Give a part of the workbench the focus (a corner of the editor area: no action there).
      await page.locator('.monaco-workbench .part.editor').click({ position: { x: 5, y: 5 } });
    }
  }
}

// quickOpen opens a workspace file by name through Ctrl+P.
async function quickOpen(page: Page, name: string): Promise<void> {
  const input = await openQuickInput(page, 'Control+P');
  await input.fill(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor();
  await page.keyboard.press('Enter');
}

// outputChannelText is the smith output channel's text: a log output channel is written to a
// file in the extension's log folder of the profile, which the Output view shows.
function outputChannelText(profile: string): string {
  const logs = path.join(profile, 'data', 'logs');
  for (const session of fs.readdirSync(logs)) {
    for (const host of fs.readdirSync(path.join(logs, session))) {
      const file = path.join(logs, session, host, 'smith-dev.smith-vscode', 'smith.log');
      if (host.startsWith('exthost') && fs.existsSync(file)) return fs.readFileSync(file, 'utf8');
    }
  }
  throw new Error(`no smith output channel under ${logs}`);
}

async function runCommand(page: Page, title: string): Promise<void> {
  const input = await openQuickInput(page, 'F1');
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: 15_000 });
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'hidden' });
}

async function chatFrame(page: Page): Promise<Frame> {
  for (let i = 0; i < 300; i++) {
    for (const f of page.frames()) {
      if (await f.locator('#input').count().catch(() => 0)) return f;
    }
    await page.waitForTimeout(100);
  }
  throw new Error('the chat view did not load');
}

/** A code-server workbench with the packaged extension, opened on dir in headless Chromium. */
interface Workbench {
  page: Page;
  browser: Browser;
  profile: string;
  /** The last 4 000 characters code-server printed. */
  log(): string;
  /** Closes the browser and code-server; the profile (logs) is kept with keep. */
  close(keep: boolean): Promise<void>;
}

// openWorkbench installs the .vsix in a fresh code-server profile with the test settings plus
// settings, starts code-server on dir (env added to its environment, which the extension host
// and so smith serve inherit) and opens it in headless Chromium with a wider side bar.
async function openWorkbench(dir: string, settings: Record<string, unknown>, env: Record<string, string> = {}): Promise<Workbench> {
  assert.ok(fs.existsSync(vsix), `${vsix} is missing: run "npm run package" first`);
  assert.ok(fs.existsSync('/usr/bin/chromium'), '/usr/bin/chromium is missing: apt-get install chromium');
  const install = path.join(root, 'test', 'e2e', 'install-code-server.sh');
  const csDir = execFileSync('bash', [install], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop()!;
  const codeServer = path.join(csDir, 'bin', 'code-server');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'smith-code-server-'));
  const userData = path.join(profile, 'data');
  const extDir = path.join(profile, 'extensions');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify({
    // The test profile: no built-in AI or chat, nothing that phones home or pops up.
    'chat.disableAIFeatures': true,
    'chat.commandCenter.enabled': false,
    'chat.agent.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.welcomePage.walkthroughs.openOnInstall': false,
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'extensions.ignoreRecommendations': true,
    'update.mode': 'none',
    'git.enabled': false,
    'editor.codeLens': true,
    // The test measures that an accepted hunk waits in the buffer until saved: no auto-save.
    'files.autoSave': 'off',
    'diffEditor.renderSideBySide': true,
    'diffEditor.useInlineViewWhenSpaceIsLimited': false,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'workbench.auxiliaryBar.defaultVisibility': 'hidden',
    ...settings,
  }, null, 2));
  execFileSync(codeServer, ['--user-data-dir', userData, '--extensions-dir', extDir, '--install-extension', vsix], { stdio: 'inherit' });

  const port = await freePort();
  let csLog = '';
  const cs: ChildProcess = spawn(codeServer, [
    '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--user-data-dir', userData, '--extensions-dir', extDir,
    '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust', '--disable-getting-started-override', dir,
  ], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  cs.stdout!.on('data', (d) => { csLog += d; });
  cs.stderr!.on('data', (d) => { csLog += d; });
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
  const close = async (keep: boolean) => {
    await browser.close();
    cs.kill('SIGTERM');
    if (!keep) fs.rmSync(profile, { recursive: true, force: true });
  };
  try {
    await until('code-server listening', () => /HTTP server listening/.test(csLog), 60_000);
    const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dir)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    // A wider side bar, so that the chat and the Changes tree's reasons are readable in the pictures.
    const sash = await page.locator('.part.sidebar').boundingBox();
    if (sash) {
      const x = sash.x + sash.width;
      await page.mouse.move(x, sash.y + sash.height / 2);
      await page.mouse.down();
      await page.mouse.move(x + 170, sash.y + sash.height / 2, { steps: 5 });
      await page.mouse.up();
    }
    return { page, browser, profile, log: () => csLog.slice(-4000), close };
  } catch (err) {
    console.error(`code-server log:\n${csLog.slice(-4000)}\nprofile (logs) kept in ${profile}`);
    await close(true);
    throw err;
  }
}

test('code-server: chat, per-hunk review in the native diff editor, save, undo', { timeout: 240_000 }, async () => {
  const ws = workspace();
  const file = path.join(ws.dir, 'main.go');
  const up = await startUpstream(ws.dir, ['--protocol', 'v0']);
  const wb = await openWorkbench(ws.dir, { 'smith.path': smithBin(), 'smith.upstream': up.url, 'smith.applyMode': 'review' });
  const { page, browser, profile } = wb;
  let keep = !!process.env.SMITH_E2E_KEEP;
  try {

    // Open main.go, then the chat view.
    await quickOpen(page, 'main.go');
    await page.locator('.editor-instance .monaco-editor .view-lines', { hasText: 'func total' }).waitFor();
    await runCommand(page, 'Smith: Chat');
    const chat = await chatFrame(page);
    await chat.locator('#context-chip', { hasText: '@main.go' }).waitFor({ timeout: 30_000 });

    // Send the request with Enter, as a user would; the answer streams in.
    await chat.locator('#input').fill('rename total to subtotal in main.go');
    await chat.locator('#input').press('Enter');
    await chat.locator('.message.user', { hasText: 'rename total to subtotal' }).waitFor();
    await chat.locator('.message.assistant .change', { hasText: 'main.go' }).waitFor({ timeout: 60_000 });
    await chat.locator('#busy').waitFor({ state: 'hidden', timeout: 60_000 });
    const answer = await chat.locator('.message.assistant .markdown').last().innerText();
    assert.match(answer, /subtotal/);
    // The status bar names the dialect the turn spoke and counts the pending change.
    await page.locator('.statusbar-item', { hasText: 'smith: agentsmithy v0 · 1 pending' }).waitFor({ timeout: 15_000 });
    // The Changes tree has the dialog (titled by when it started) and the change with its hunks.
    await page.locator('.pane', { hasText: 'Changes' }).locator('.monaco-list-row', { hasText: 'dialog of' }).waitFor({ timeout: 15_000 });
    await page.locator('.pane', { hasText: 'Changes' }).locator('.monaco-list-row', { hasText: 'hunk 2/2' }).waitFor({ timeout: 15_000 });
    await page.screenshot({ path: path.join(shots, 'chat.png') });

    // Hidden and shown again (VS Code disposes the webview's page meanwhile): the answer is back.
    await runCommand(page, 'View: Toggle Primary Side Bar Visibility');
    await page.locator('.pane', { hasText: 'Changes' }).waitFor({ state: 'hidden' });
    await runCommand(page, 'Smith: Chat');
    const shown = await chatFrame(page);
    await shown.locator('.message.assistant .markdown', { hasText: 'subtotal' }).first().waitFor({ timeout: 15_000 });

    // The Changes tree lists the pending change; it opens the native diff editor.
    const item = page.locator('.pane', { hasText: 'Changes' }).locator('.monaco-list-row', { hasText: 'main.go' }).first();
    await item.waitFor({ timeout: 30_000 });
    await item.click();
    const diff = page.locator('.monaco-diff-editor').first();
    await diff.waitFor({ timeout: 30_000 });
    const accept1 = page.locator('.codelens-decoration a', { hasText: 'Accept hunk 1/2' });
    await accept1.waitFor({ timeout: 30_000 });
    await page.locator('.codelens-decoration a', { hasText: 'Reject hunk 2/2' }).waitFor();
    await page.screenshot({ path: path.join(shots, 'diff-review.png') });

    // Accept hunk 1: the edit lands in the open buffer, not on disk.
    await accept1.click();
    await accept1.waitFor({ state: 'detached', timeout: 30_000 });
    const reject2 = page.locator('.codelens-decoration a', { hasText: 'Reject hunk 2/2' });
    await reject2.waitFor();
    assert.equal(fs.readFileSync(file, 'utf8'), MAIN_GO, 'accepting edits the buffer; the disk waits for a save');
    await page.screenshot({ path: path.join(shots, 'diff-hunk1-accepted.png') });
    await reject2.click();
    await reject2.waitFor({ state: 'detached', timeout: 30_000 });

    await runCommand(page, 'File: Save All');
    const want = MAIN_GO.replace('total(basket))', 'subtotal(basket))').replace('withTax(total(', 'withTax(subtotal(');
    await until('main.go saved with hunk 1 only', () => fs.readFileSync(file, 'utf8') === want, 15_000);

    // The editor shows the same text (the diff closed, main.go alone in the editor).
    await runCommand(page, 'View: Close All Editors');
    await page.locator('.monaco-diff-editor').waitFor({ state: 'detached' });
    await quickOpen(page, 'main.go');
    const editor = '.editor-group-container.active .editor-instance .monaco-editor';
    await until('the editor shows hunk 1 applied', async () => {
      const t = await editorText(page, editor);
      return t.includes('fmt.Printf("subtotal: %.2f\\n", subtotal(basket))') && t.includes('func total(items []item) float64');
    });

    // Undo the change: the buffer goes back to the original text.
    await runCommand(page, 'Smith: Undo last change');
    await until('the editor shows the original text again', async () => {
      const t = await editorText(page, editor);
      return t.includes('fmt.Printf("subtotal: %.2f\\n", total(basket))') && !t.includes('subtotal(basket)');
    });
    await runCommand(page, 'File: Save All');
    await until('main.go saved back to the original', () => fs.readFileSync(file, 'utf8') === MAIN_GO, 15_000);
    await page.screenshot({ path: path.join(shots, 'after-undo.png') });

    // The Output channel carries the daemon's stderr.
    await runCommand(page, 'Smith: Show output');
    await page.locator('.output-view .view-lines', { hasText: 'msg=initialized' }).waitFor({ timeout: 15_000 });

    // A second proposal, then the user edits the line it would change, without saving: the
    // engine re-validates against the buffer and the Changes tree shows the conflict and why.
    const chat2 = await chatFrame(page);
    await chat2.locator('#input').fill('rename withTax to addTax in main.go');
    await chat2.locator('#input').press('Enter');
    const changes = page.locator('.pane', { hasText: 'Changes' });
    await changes.locator('.monaco-list-row', { hasText: /main\.go\s*pending/ }).first().waitFor({ timeout: 60_000 });
    await page.locator(`${editor} .view-lines`).click();
    await page.keyboard.press('Control+G');
    await page.keyboard.type('9');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Home');
    await page.keyboard.press('Shift+End');
    await page.keyboard.type('fmt.Println("edited by hand")');
    const conflict = changes.locator('.monaco-list-row', { hasText: 'conflict' }).first();
    await conflict.waitFor({ timeout: 30_000 });
    const conflictText = (await conflict.innerText()).replace(/\s+/g, ' ');
    assert.ok(/conflict · line \d+ · \S/.test(conflictText), `the hunk's row gives the engine's reason: ${conflictText}`);
    assert.equal(fs.readFileSync(file, 'utf8'), MAIN_GO, 'nothing written: the edit is unsaved, the proposal is a conflict');
    await page.screenshot({ path: path.join(shots, 'conflict.png') });

    // Smith: Explain selection sends the selected lines as context.
    await page.locator(`${editor} .view-lines`).click();
    await page.keyboard.press('Control+G');
    await page.keyboard.type('7');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Shift+ArrowDown');
    await runCommand(page, 'Smith: Explain selection');
    const chat3 = await chatFrame(page);
    await chat3.locator('.message.user', { hasText: 'Explain the selected code.' }).locator('.chip', { hasText: '@main.go:7-8' }).waitFor({ timeout: 30_000 });
    await chat3.locator('#busy').waitFor({ state: 'hidden', timeout: 60_000 });
    assert.ok((await chat3.locator('.message.assistant').last().innerText()).trim().length > 0, 'the explanation arrived');

    for (const f of ['chat.png', 'diff-review.png', 'conflict.png']) {
      assert.ok(fs.statSync(path.join(shots, f)).size > 20_000, `${f} has content`);
    }
  } catch (err) {
    for (const p of browser.contexts().flatMap((c) => c.pages())) {
      await p.screenshot({ path: path.join(shots, 'failure.png') }).catch(() => undefined);
    }
    console.error(`code-server log:\n${wb.log()}\nscreenshots in ${shots}; profile (logs) kept in ${profile}`);
    keep = true;
    throw err;
  } finally {
    await wb.close(keep);
    await up.stop();
    ws.cleanup();
  }
});

// A smith serve that cannot start (here: SMITH_STATE_DIR names a file) answers initialize with
// why, after a window/showMessage saying the same (for plain LSP clients). The user gets that
// reason once, in the extension's notification with its buttons, naming the setting and the fix,
// and the extension does not restart a serve that would only refuse again (before 9e054f5: five
// restarts, each notification repeated, then "The smith server crashed 5 times in the last 3
// minutes"; before that the reason came in three notifications: serve's showMessage, the language
// client's "couldn't create connection to server", and the extension's). Show output then opens
// on the reason and what to do, not on the language client's handling of the failed start (before:
// its stop of a client still starting threw, logged with a stack trace as "Stopping server
// failed", then it killed the serve, "exited with signal SIGKILL", each an [error] line); a serve
// that ends after it started is still logged as an error and restarted.
test('code-server: a smith serve that refuses to start says why once and is not restarted', { timeout: 180_000 }, async () => {
  const ws = workspace();
  const notADir = path.join(ws.dir, 'not-a-folder');
  fs.writeFileSync(notADir, 'a file\n');
  // smith.path runs smith through a script that counts its starts.
  const starts = path.join(ws.dir, '..', 'serve-starts');
  const counted = path.join(ws.dir, '..', 'smith-counted');
  const pids = path.join(ws.dir, '..', 'serve-pids');
  // While the file slow exists, a start waits 4 s before smith runs: a start still under way.
  const slow = path.join(ws.dir, '..', 'serve-slow');
  fs.writeFileSync(counted, `#!/bin/sh\necho "$*" >> '${starts}'\necho $$ >> '${pids}'\n[ -f '${slow}' ] && sleep 4\nexec '${smithBin()}' "$@"\n`, { mode: 0o755 });
  const wb = await openWorkbench(ws.dir, { 'smith.path': counted }, { SMITH_STATE_DIR: notADir });
  const { page, profile } = wb;
  let keep = !!process.env.SMITH_E2E_KEEP;
  try {
    // Opening a file starts the extension, whose serve refuses initialize.
    await quickOpen(page, 'main.go');
    const toasts = page.locator('.notification-toast');
    await toasts.filter({ hasText: 'cannot be used' }).first().waitFor({ timeout: 60_000 });
    // Long enough for the language client's restarts (each after the refused serve has waited
    // for the editor to let go, up to 5 s) and for any late notification.
    await page.waitForTimeout(12_000);
    const started = fs.readFileSync(starts, 'utf8').trim().split('\n');
    assert.deepEqual(started, ['serve'], 'smith serve started once, not restarted');
    const texts = (await toasts.allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
    const reasons = texts.filter((t) => t.includes('cannot be used'));
    console.log(`notification toasts: ${texts.length}, with the reason: ${reasons.length}: ${JSON.stringify(texts)}`);
    assert.equal(reasons.length, 1, `one notification says why: ${JSON.stringify(texts)}`);
    assert.match(reasons[0], /state directory .*not-a-folder \(from SMITH_STATE_DIR\) cannot be used: .*not a directory; set SMITH_STATE_DIR to a directory/);
    assert.ok(!texts.some((t) => /couldn't create connection|crashed|will not be restarted/i.test(t)), `only the extension's notification: ${JSON.stringify(texts)}`);
    await page.screenshot({ path: path.join(shots, 'state-dir-refused.png') });
    // It is the extension's: its buttons.
    const reason = toasts.filter({ hasText: 'cannot be used' });
    const buttons = (await reason.locator('.monaco-button').allInnerTexts()).map((t) => t.trim());
    assert.deepEqual(buttons, ['Retry', 'Show output'], `the notification's buttons: ${JSON.stringify(buttons)}`);
    // Only three toasts fit on the screen: the notification center lists every one.
    await runCommand(page, 'Notifications: Show Notifications');
    const items = page.locator('.notifications-center .notification-list-item');
    await items.first().waitFor({ timeout: 10_000 });
    const listed = (await items.allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
    console.log(`notifications listed: ${listed.length}, with the reason: ${listed.filter((t) => t.includes('cannot be used')).length}`);
    assert.equal(listed.filter((t) => t.includes('cannot be used')).length, 1, `the notification center has the reason once: ${JSON.stringify(listed)}`);

    // The user clicks Show output to learn what to do: the output says what happened and what
    // to do, plainly, not the language client's handling of the failed start (before this test:
    // "Stopping server failed" with "Client is not running and can't be stopped" and its stack
    // trace, "couldn't create connection to server", "Server process exited with signal
    // SIGKILL", "Connection to server got closed", each an [error] line).
    await items.filter({ hasText: 'cannot be used' }).locator('.monaco-button', { hasText: 'Show output' }).click();
    const view = page.locator('.output-view .view-lines');
    await view.filter({ hasText: 'smith serve could not start: state directory' }).waitFor({ timeout: 15_000 });
    await page.waitForTimeout(3_000); // what the language client logs after a failed start comes within 2 s
    const shown = (await view.innerText()).replace(/\u00a0/g, ' ');
    const channel = outputChannelText(profile);
    console.log(`the smith output channel after the refusal:\n${channel}`);
    await page.screenshot({ path: path.join(shots, 'state-dir-output.png') });
    for (const text of [shown, channel]) {
      for (const noise of ['Stopping server failed', "can't be stopped", 'SIGKILL', "couldn't create connection", 'Connection to server got closed']) {
        assert.ok(!text.includes(noise), `the output has no "${noise}":\n${text}`);
      }
      assert.ok(!/^\s+at /m.test(text), `the output has no stack trace:\n${text}`);
    }
    // The last lines, where the Output view opens: the reason, the fix, what to do after it.
    const lines = channel.trimEnd().split('\n');
    assert.match(lines.at(-2)!, /\[error\] smith serve could not start: state directory .*not-a-folder \(from SMITH_STATE_DIR\) cannot be used: .*not a directory; set SMITH_STATE_DIR to a directory/, channel);
    assert.match(lines.at(-1)!, /\[info\] .*Retry.*"Smith: Restart smith serve"/, channel);
    // The errors: serve's own last words on its stderr ("smith: <reason>"), then the extension's.
    const errors = lines.filter((l) => /^\S+ \S+ \[error\]/.test(l)).map((l) => l.replace(/^\S+ \S+ \[error\] /, ''));
    assert.deepEqual(errors.map((l) => l.slice(0, l.indexOf(':'))), ['smith', 'smith serve could not start'], `the errors in the output:\n${channel}`);

    // Restarted before the fix, it refuses again: one new notification, the output as plain.
    await runCommand(page, 'Smith: Restart smith serve');
    await until('smith serve started again', () => fs.readFileSync(starts, 'utf8').trim().split('\n').length === 2, 30_000);
    const again = toasts.filter({ hasText: 'cannot be used' });
    await again.first().waitFor({ timeout: 30_000 });
    await page.waitForTimeout(3_000);
    assert.equal(await again.count(), 1, 'the second refusal is one notification');
    const channel2 = outputChannelText(profile);
    assert.ok(!/Stopping server failed|can't be stopped|SIGKILL|^\s+at /m.test(channel2), `the second refusal is as plain:\n${channel2}`);
    assert.equal(channel2.split('\n').filter((l) => /^\S+ \S+ \[error\]/.test(l)).length, 4, `two errors per refusal:\n${channel2}`);
    assert.match(channel2.trimEnd().split('\n').at(-2)!, /\[error\] smith serve could not start: state directory/, channel2);

    // The fix, then Retry: serve starts again, and runs.
    fs.rmSync(notADir);
    fs.mkdirSync(notADir);
    await again.locator('.monaco-button', { hasText: 'Retry' }).click();
    await until('smith serve started a third time', () => fs.readFileSync(starts, 'utf8').trim().split('\n').length === 3, 30_000);
    await page.locator('.statusbar-item', { hasText: /smith: / }).waitFor({ timeout: 30_000 });

    // A serve that ends after it started is a failure, logged as one, and restarted.
    const running = Number(fs.readFileSync(pids, 'utf8').trim().split('\n').at(-1));
    process.kill(running, 'SIGKILL');
    await until('the end of a running serve logged as an error', () => /\[error\] Server process exited with signal SIGKILL/.test(outputChannelText(profile)), 15_000);
    await until('smith serve restarted by the language client', () => fs.readFileSync(starts, 'utf8').trim().split('\n').length === 4, 30_000);

    // A restart while a start is under way (a setting changed meanwhile) stops that start, whose
    // failure says nothing (before 8c12b77: "smith serve could not start" and its notification):
    // only the new start is heard of.
    await page.locator('.statusbar-item', { hasText: /smith: / }).waitFor({ timeout: 30_000 });
    const before = outputChannelText(profile).length;
    fs.writeFileSync(slow, '');
    await runCommand(page, 'Smith: Restart smith serve');
    await until('a slow start under way', () => fs.readFileSync(starts, 'utf8').trim().split('\n').length === 5, 30_000);
    fs.rmSync(slow);
    await runCommand(page, 'Smith: Restart smith serve');
    await until('smith serve started a sixth time', () => fs.readFileSync(starts, 'utf8').trim().split('\n').length === 6, 30_000);
    await page.locator('.statusbar-item', { hasText: /smith: / }).waitFor({ timeout: 30_000 });
    await page.waitForTimeout(5_000); // the stopped start ends within 4 s (killed after 2)
    const after = outputChannelText(profile).slice(before);
    assert.ok(!after.includes('could not start'), `the stopped start said it could not start:\n${after}`);
    const noted = (await toasts.allInnerTexts()).filter((t) => t.includes('could not start') && !t.includes('cannot be used'));
    assert.deepEqual(noted, [], 'no notification of the stopped start');
  } catch (err) {
    await page.screenshot({ path: path.join(shots, 'failure-state-dir.png') }).catch(() => undefined);
    console.error(`code-server log:\n${wb.log()}\nscreenshots in ${shots}; profile (logs) kept in ${profile}`);
    keep = true;
    throw err;
  } finally {
    await wb.close(keep);
    ws.cleanup();
  }
});
