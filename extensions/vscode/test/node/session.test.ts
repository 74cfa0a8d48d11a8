// The extension's client logic (SmithSession, Transcript, advise) against a real smith serve
// and a real smith upstream, over vscode-jsonrpc: the same requests the extension sends.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import { startServe, startUpstream, workspace, until, MAIN_GO, type Serve, type Upstream } from '../shared/smith';
import { advise, errorCode } from '../../src/errors';
import { ErrorCodes } from '../../src/protocol';
import { hunkLine, SmithSession } from '../../src/session';
import { findSmith } from '../../src/findSmith';

describe('a v0 upstream: the agent proposes, the user decides per hunk', () => {
  let ws: ReturnType<typeof workspace>;
  let up: Upstream;
  let serve: Serve;
  before(async () => {
    ws = workspace();
    up = await startUpstream(ws.dir, ['--protocol', 'v0']);
    serve = await startServe(ws.dir, ws.state, up.url);
  });
  after(async () => {
    await serve?.close();
    await up?.stop();
    ws?.cleanup();
  });

  test('a turn streams into the transcript and proposes one change with two hunks', async () => {
    const s = serve.session;
    let updates = 0;
    s.onTranscript.on(() => updates++);
    const res = await s.chat({ message: 'rename total to subtotal in main.go' }, 'main.go');
    assert.equal(res.outcome, 'completed');
    assert.equal(res.changes.length, 1);
    const t = s.transcript.state;
    assert.equal(t.busy, false);
    assert.equal(t.dialogId, res.dialogId);
    assert.equal(t.messages.length, 2);
    assert.equal(t.messages[0].role, 'user');
    assert.equal(t.messages[0].context, 'main.go');
    const answer = t.messages[1];
    assert.match(answer.text, /subtotal/);
    assert.equal(answer.outcome, 'completed');
    assert.ok(answer.changes.some((c) => c.path === 'main.go'), 'the change event is in the transcript');
    assert.ok(updates > 3, `the transcript was updated as events streamed (${updates} updates)`);

    assert.equal(fs.readFileSync(path.join(ws.dir, 'main.go'), 'utf8'), MAIN_GO, 'nothing is written before the user decides');
    const c = s.get(res.changes[0])!;
    assert.equal(c.path, 'main.go');
    assert.equal(c.status, 'pending');
    assert.equal(c.hunks.length, 2);
    // The engine's structured ranges (no "@@" parsing in the extension): line 8 and line 23.
    assert.equal(c.hunks[0].oldStart! <= 8 && 8 < c.hunks[0].oldStart! + c.hunks[0].oldLines!, true, JSON.stringify(c.hunks[0]));
    assert.equal(c.hunks[1].oldStart! <= 23 && 23 < c.hunks[1].oldStart! + c.hunks[1].oldLines!, true, JSON.stringify(c.hunks[1]));
  });

  test('accept hunk 1, reject hunk 2, undo: the file on disk follows each step', async () => {
    const s = serve.session;
    const file = path.join(ws.dir, 'main.go');
    const c = s.all().find((x) => x.path === 'main.go' && x.status === 'pending')!;
    const [h1, h2] = c.hunks;

    const p = await s.preview(c.id, [h2.id]);
    assert.equal(p.hunks?.length, 1, 'the preview names the hunk it previews');
    const resultLines = p.result.split('\n');
    assert.match(resultLines[hunkLine(p.hunks![0])] + resultLines.slice(hunkLine(p.hunks![0])).join('\n'), /subtotal/);
    assert.match(p.result, /func subtotal\(/);
    assert.match(p.result, /total\(basket\)/, 'only hunk 2 is in this preview');

    const afterAccept = await s.apply(c.id, [h1.id]);
    assert.equal(afterAccept.hunks.find((h) => h.id === h1.id)?.status, 'applied');
    let disk = fs.readFileSync(file, 'utf8');
    assert.match(disk, /subtotal\(basket\)/);
    assert.match(disk, /func total\(/);

    const afterReject = await s.reject(c.id, [h2.id]);
    assert.equal(afterReject.hunks.find((h) => h.id === h2.id)?.status, 'rejected');
    disk = fs.readFileSync(file, 'utf8');
    assert.match(disk, /withTax\(subtotal\(basket\), 0.2\)/);
    assert.match(disk, /\/\/ total sums count/);

    const undone = await s.undo();
    assert.equal(undone.id, c.id);
    assert.equal(fs.readFileSync(file, 'utf8'), MAIN_GO);
  });

  test('a file edited after the proposal is a conflict with the engine\'s reason, and nothing is written', async () => {
    const s = serve.session;
    const file = path.join(ws.dir, 'main.go');
    const res = await s.chat({ message: 'rename withTax to addTax in main.go' });
    const c = s.get(res.changes[0])!;
    const edited = MAIN_GO.replace(/withTax/g, 'plusTax');
    fs.writeFileSync(file, edited);
    let err: unknown;
    try {
      const after = await s.apply(c.id);
      // The watcher may have re-validated it first: then apply answers the conflicting change.
      assert.equal(after.status, 'conflict', JSON.stringify(after));
    } catch (e) {
      err = e;
      assert.equal(errorCode(e), ErrorCodes.Conflict, String(e));
      assert.deepEqual(advise('accept main.go', e).actions, ['Review changes', 'Show output']);
    }
    assert.equal(fs.readFileSync(file, 'utf8'), edited, 'nothing written');
    await until('the change listed as conflict', async () => {
      await s.refreshChanges();
      return s.get(c.id)?.status === 'conflict';
    });
    const listed = s.get(c.id)!;
    const reason = listed.reason || listed.hunks.map((h) => h.reason).join(' ');
    assert.ok(reason.length > 0, `the conflict carries the engine's reason (${JSON.stringify(listed)}; apply error: ${err})`);
    fs.writeFileSync(file, MAIN_GO);
  });

  test('dialogs: new, rename, list, switch loads the history, delete', async () => {
    const s = serve.session;
    const first = s.transcript.state.dialogId!;
    const d = await s.newDialog('scratch');
    assert.notEqual(d.id, first);
    assert.equal(s.transcript.state.messages.length, 0);
    await s.renameDialog(d.id, 'renamed');
    const list = await s.dialogs();
    assert.equal(list.find((x) => x.id === d.id)?.title, 'renamed');
    await s.selectDialog(first);
    assert.equal(s.transcript.state.dialogId, first);
    // A v0 upstream keeps no history: the session's own record of the dialog comes back.
    assert.ok(s.transcript.state.messages.some((m) => m.role === 'user' && /rename total to subtotal/.test(m.text)), 'transcript restored');
    assert.ok(s.transcript.state.messages.some((m) => m.role === 'assistant' && /subtotal/.test(m.text)));
    await s.deleteDialog(d.id);
    assert.equal((await s.dialogs()).some((x) => x.id === d.id), false);
  });

  test('status: reachable upstream and its dialect', async () => {
    const st = await serve.session.status();
    assert.equal(st.reachable, true);
    assert.equal(st.upstream, up.url);
    assert.ok(st.dialect.length > 0);
    assert.equal(st.runningTurns, 0);
  });
});

describe('turns that do not complete', () => {
  test('Stop cancels a running turn: the answer is partial and the outcome cancelled', async () => {
    const ws = workspace();
    const up = await startUpstream(ws.dir, ['--protocol', 'v0', '--delay', '150ms']);
    const serve = await startServe(ws.dir, ws.state, up.url);
    try {
      const s = serve.session;
      const cts = new CancellationTokenSource();
      const running = s.chat({ message: 'rename total to subtotal in main.go' }, undefined, cts.token);
      await until('the first text delta', () => (s.transcript.state.messages[1]?.text.length ?? 0) > 0);
      assert.equal(s.transcript.state.busy, true);
      cts.cancel();
      const res = await running;
      assert.equal(res.outcome, 'cancelled');
      assert.equal(s.transcript.state.busy, false);
      assert.equal(s.transcript.state.messages[1].outcome, 'cancelled');
      assert.equal(fs.readFileSync(path.join(ws.dir, 'main.go'), 'utf8'), MAIN_GO);
    } finally {
      await serve.close();
      await up.stop();
      ws.cleanup();
    }
  });

  test('an unreachable upstream is -32017 with Retry / Open settings / Show output', async () => {
    const ws = workspace();
    const serve = await startServe(ws.dir, ws.state, 'http://127.0.0.1:9');
    try {
      await assert.rejects(serve.session.chat({ message: 'hello' }), (e: unknown) => {
        assert.equal(errorCode(e), ErrorCodes.UpstreamUnreachable);
        const a = advise('chat', e);
        assert.deepEqual(a.actions, ['Retry', 'Open settings', 'Show output']);
        assert.match(a.message, /unreachable/);
        return true;
      });
      const t = serve.session.transcript.state;
      assert.equal(t.busy, false);
      assert.ok(t.messages[1].errors.length > 0, 'the error is shown in the chat');
      assert.equal((await serve.session.status()).reachable, false);
    } finally {
      await serve.close();
      ws.cleanup();
    }
  });
});

test('applyMode auto (autoApply): a proposal is applied as it arrives, and undo restores the file', async () => {
  const ws = workspace();
  const up = await startUpstream(ws.dir, ['--protocol', 'v0']);
  const serve = await startServe(ws.dir, ws.state, up.url, { autoApply: true });
  const file = path.join(ws.dir, 'main.go');
  try {
    const s = serve.session;
    const res = await s.chat({ message: 'rename total to subtotal in main.go' });
    await until('the change applied', async () => {
      await s.refreshChanges();
      return s.get(res.changes[0])?.status === 'applied';
    });
    assert.match(fs.readFileSync(file, 'utf8'), /func subtotal\(/);
    await s.undo(res.changes[0]);
    assert.equal(fs.readFileSync(file, 'utf8'), MAIN_GO);
  } finally {
    await serve.close();
    await up.stop();
    ws.cleanup();
  }
});

describe('a v2 upstream writes files itself (appliedUpstream)', () => {
  test('the change shows as written by the server; reset restores the file', async () => {
    const ws = workspace();
    const up = await startUpstream(ws.dir, ['--protocol', 'v2']);
    const serve = await startServe(ws.dir, ws.state, up.url);
    const file = path.join(ws.dir, 'main.go');
    try {
      const s = serve.session;
      const res = await s.chat({ message: 'rename total to subtotal in main.go' });
      assert.equal(res.protocol, 'v2');
      const c = s.get(res.changes[0])!;
      assert.equal(c.status, 'appliedUpstream');
      assert.ok(s.transcript.state.messages[1].changes.some((x) => x.appliedUpstream), 'the transcript says the server wrote it');
      assert.match(fs.readFileSync(file, 'utf8'), /func subtotal\(/);
      const session = (await serve.conn.sendRequest('smith/session', {})) as { has_unapproved: boolean };
      assert.equal(session.has_unapproved, true);
      await s.resetSession();
      await until('main.go restored by the reset', () => fs.readFileSync(file, 'utf8') === MAIN_GO);
      const again = await s.chat({ message: 'rename withTax to addTax in main.go' });
      assert.equal(again.outcome, 'completed');
      // A new session on the same connection has no transcript of its own: the history comes from the server.
      const fresh = new SmithSession(serve.conn);
      await fresh.selectDialog(res.dialogId);
      assert.ok(fresh.transcript.state.messages.some((m) => m.role === 'user' && /rename total to subtotal/.test(m.text)), JSON.stringify(fresh.transcript.state));
      assert.ok(fresh.transcript.state.messages.some((m) => m.role === 'assistant' && m.changes.length > 0), 'file edits in the history');
      fresh.dispose();
      await s.approveSession();
      const approved = (await serve.conn.sendRequest('smith/session', {})) as { has_unapproved: boolean };
      assert.equal(approved.has_unapproved, false);
    } finally {
      await serve.close();
      await up.stop();
      ws.cleanup();
    }
  });
});

test('findSmith: a missing binary is undefined (the extension then shows the install command)', () => {
  assert.equal(findSmith('smith-that-does-not-exist', '/nonexistent:/also-not'), undefined);
  assert.equal(findSmith('/nonexistent/smith'), undefined);
  const dir = path.dirname(process.env.SMITH_BIN || path.resolve(__dirname, '../../../../../bin/smith'));
  assert.equal(findSmith('smith', `/nonexistent:${dir}`), path.join(dir, 'smith'));
});
