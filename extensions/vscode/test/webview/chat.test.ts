// The chat view's page in headless Chromium (Debian's /usr/bin/chromium through playwright-core):
// the exact page the extension shows, acquireVsCodeApi stubbed, fed the transcript of a real
// turn of `smith serve` + `smith upstream` as it streams.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { chatHtml } from '../../src/chatHtml';
import { startServe, startUpstream, workspace } from '../shared/smith';
import { TranscriptSync } from '../../src/transcript';

const root = path.resolve(__dirname, '../../..');
const shots = process.env.SMITH_SCREENSHOTS || fs.mkdtempSync(path.join(os.tmpdir(), 'smith-webview-'));

/** Serves out/webview.js and media/chat.css on loopback, as the webview's resource origin. */
function serveAssets(): Promise<{ origin: string; close: () => void }> {
  const files: Record<string, [string, string]> = {
    '/webview.js': [path.join(root, 'out', 'webview.js'), 'text/javascript'],
    '/chat.css': [path.join(root, 'media', 'chat.css'), 'text/css'],
  };
  let page = '';
  const srv = http.createServer((req, res) => {
    if (req.url === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(page);
      return;
    }
    const f = files[req.url ?? ''];
    if (!f) return void res.writeHead(req.url === '/favicon.ico' ? 204 : 404).end();
    res.writeHead(200, { 'Content-Type': f[1] }).end(fs.readFileSync(f[0]));
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => {
    const origin = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
    page = chatHtml({ cspSource: origin, scriptUri: `${origin}/webview.js`, styleUri: `${origin}/chat.css`, nonce: 'testnonce123' });
    resolve({ origin, close: () => srv.close() });
  }));
}

/** A page with acquireVsCodeApi stubbed: posted messages and saved state land on window. */
async function open(browser: Browser, origin: string, saved?: unknown): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 420, height: 640 } });
  await page.addInitScript((s) => {
    const w = window as unknown as { __posted: unknown[]; __state: unknown };
    w.__posted = [];
    w.__state = s ?? undefined;
    (window as unknown as { acquireVsCodeApi: () => unknown }).acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => w.__posted.push(m),
      getState: () => w.__state,
      setState: (v: unknown) => { w.__state = v; },
    });
  }, saved);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(origin + '/');
  await page.locator('#input').waitFor();
  assert.deepEqual(errors, [], 'no script or CSP errors');
  return page;
}

const posted = (page: Page) => page.evaluate(() => (window as unknown as { __posted: Array<{ type: string }> }).__posted);

test('the chat view renders a streamed answer, sends with Enter, and comes back after hiding', { timeout: 90_000 }, async () => {
  assert.ok(fs.existsSync(path.join(root, 'out', 'webview.js')), 'out/webview.js is missing: run "node esbuild.mjs"');
  const assets = await serveAssets();
  const ws = workspace();
  const up = await startUpstream(ws.dir, ['--protocol', 'v2', '--delay', '20ms']);
  const serve = await startServe(ws.dir, ws.state, up.url);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
  try {
    const page = await open(browser, assets.origin);
    assert.deepEqual(await posted(page), [{ type: 'ready' }]);
    const send = (state: unknown) => page.evaluate((s) => window.postMessage({ type: 'state', state: s }, '*'), state);
    await send({ transcript: { messages: [], busy: false }, dialogs: [], context: 'main.go' });
    await page.locator('#context-chip', { hasText: '@main.go' }).waitFor();

    // Enter sends; Shift+Enter is a new line.
    await page.locator('#input').click();
    await page.keyboard.type('rename total');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('to subtotal in main.go');
    assert.equal(await page.locator('#input').inputValue(), 'rename total\nto subtotal in main.go');
    await page.keyboard.press('Enter');
    const sent = (await posted(page)).at(-1) as { type: string; text: string; includeContext: boolean };
    assert.deepEqual(sent, { type: 'send', text: 'rename total\nto subtotal in main.go', includeContext: true });
    assert.equal(await page.locator('#input').inputValue(), '');

    // The real turn: every transcript update goes to the page as the extension host sends it:
    // the whole state once, then only what changed (TranscriptSync).
    const s = serve.session;
    const sync = new TranscriptSync();
    let frames = 0;
    let wholes = 0;
    let sawPartial = false;
    const pushes: Promise<unknown>[] = [];
    s.onTranscript.on(() => {
      frames++;
      const patch = sync.patch(s.transcript);
      let msg: unknown = { type: 'patch', patch, context: 'main.go' };
      if (!patch) {
        sync.full(s.transcript);
        wholes++;
        msg = { type: 'state', state: { transcript: structuredClone(s.transcript.state), dialogs: [], context: 'main.go' } };
      }
      pushes.push(page.evaluate((m) => window.postMessage(m, '*'), msg).then(async () => {
        if (s.transcript.state.busy && !sawPartial) {
          sawPartial = (await page.locator('#busy').isVisible()) && (await page.locator('#stop').isEnabled());
          // The question's element, to see below that the answer's updates left it alone.
          await page.evaluate(() => { (document.querySelector('.message.user') as unknown as { __kept: boolean }).__kept = true; });
        }
      }));
    });
    const res = await s.chat({ message: 'rename total to subtotal in main.go' }, 'main.go');
    await Promise.all(pushes);
    assert.equal(res.outcome, 'completed');
    assert.ok(frames > 5, `the answer arrived in many updates (${frames})`);
    assert.equal(wholes, 1, 'the whole transcript was sent once, then only what changed');
    assert.ok(sawPartial, 'while the turn ran, the busy indicator showed and Stop was enabled');
    assert.equal(await page.evaluate(() => (document.querySelector('.message.user') as unknown as { __kept?: boolean }).__kept), true,
      'the question was not rendered again for each part of the answer');
    // What the patches built is what the whole state renders.
    const patched = await page.locator('#messages').innerHTML();
    await send({ transcript: s.transcript.state, dialogs: [], context: 'main.go' });
    assert.equal(await page.locator('#messages').innerHTML(), patched);
    await page.locator('#busy').waitFor({ state: 'hidden' });
    assert.equal(await page.locator('#stop').isDisabled(), true);

    const answer = page.locator('.message.assistant').last();
    // Markdown rendered: `subtotal` in backticks became <code>.
    assert.ok(await answer.locator('.markdown code', { hasText: 'subtotal' }).count() > 0, await answer.innerHTML());
    // Reasoning is there, collapsed.
    const reasoning = answer.locator('details.reasoning');
    assert.equal(await reasoning.count(), 1);
    assert.equal(await reasoning.evaluate((d) => (d as HTMLDetailsElement).open), false);
    // One line per tool call, and the change the server wrote.
    assert.ok(await answer.locator('.tool').count() >= 1);
    await answer.locator('.change', { hasText: 'written by the server' }).waitFor();
    await page.screenshot({ path: path.join(shots, 'webview-chat.png') });

    // Citations are links that ask the host to open them; HTML in an answer is not executed.
    const t = structuredClone(s.transcript.state);
    t.messages.push({
      role: 'assistant', reasoning: '', tools: [], notices: [], errors: [], changes: [],
      text: 'See <img src=x onerror="window.__pwned=1"> and [a link](javascript:window.__pwned=2).',
      citations: [{ file: 'main.go:24', title: 'main.go' }, { url: 'https://example.org/doc', title: 'docs' }],
    });
    await send({ transcript: t, dialogs: [{ id: s.transcript.state.dialogId, title: 'pricing' }], context: 'main.go' });
    await page.locator('.citation', { hasText: 'main.go' }).click();
    assert.deepEqual((await posted(page)).at(-1), { type: 'open', file: 'main.go:24' });
    await page.locator('.citation', { hasText: 'docs' }).click();
    assert.deepEqual((await posted(page)).at(-1), { type: 'open', url: 'https://example.org/doc' });
    assert.equal(await page.locator('.message.assistant img').count(), 0, 'raw HTML is escaped');
    assert.equal(await page.locator('a[href^="javascript"]').count(), 0, 'javascript: links are not made');
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    assert.equal(await page.locator('#dialog-select option:checked').innerText(), 'pricing');

    // The screenshot is not blank: many distinct colours.
    const png = await page.screenshot();
    const colours = await page.evaluate(async (b64) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const c = document.createElement('canvas');
      c.width = img.width; c.height = img.height;
      const g = c.getContext('2d')!;
      g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data;
      const seen = new Set<number>();
      for (let i = 0; i < d.length; i += 4 * 7) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
      return seen.size;
    }, png.toString('base64'));
    assert.ok(colours > 20, `the screenshot has content (${colours} colours)`);

    // Hidden and shown again: a new page gets only the saved state, and shows the answer at once.
    const saved = await page.evaluate(() => (window as unknown as { __state: unknown }).__state);
    const again = await open(browser, assets.origin, saved);
    await again.locator('.message.assistant .markdown code', { hasText: 'subtotal' }).first().waitFor({ timeout: 2000 });
    assert.equal(await again.locator('.message.user').first().innerText().then((x) => x.includes('rename total to subtotal')), true);
    await again.close();
    await page.close();
  } finally {
    await browser.close();
    await serve.close();
    await up.stop();
    ws.cleanup();
    assets.close();
  }
});
