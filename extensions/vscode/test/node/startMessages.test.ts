// StartMessages, the message strategy the extension gives the language client's connection,
// between vscode-jsonrpc and a real smith serve: serve's window/showMessage saying why it cannot
// start stays off the screen (the extension says it once, with its buttons), and what serve
// says once started still reaches the client.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import { smithBin, startUpstream, workspace, until } from '../shared/smith';
import { StartMessages } from '../../src/startMessages';

interface Client { conn: MessageConnection; shown: string[]; exited: Promise<number | null> }

/** smith serve over stdio with env added, spoken to through strategy (none: vscode-jsonrpc's own dispatch). */
function serve(dir: string, args: string[], env: Record<string, string>, strategy?: StartMessages): Client {
  const c = spawn(smithBin(), ['serve', ...args], { cwd: dir, stdio: ['pipe', 'pipe', 'ignore'], env: { ...process.env, ...env } });
  const exited = new Promise<number | null>((resolve) => c.once('exit', (code) => resolve(code)));
  const conn = createMessageConnection(new StreamMessageReader(c.stdout!), new StreamMessageWriter(c.stdin!), undefined,
    strategy ? { messageStrategy: strategy } : undefined);
  const shown: string[] = [];
  conn.onNotification('window/showMessage', (p: { message: string }) => { shown.push(p.message); });
  conn.listen();
  return { conn, shown, exited };
}

function initialize(conn: MessageConnection, dir: string, init: Record<string, unknown> = {}): Promise<unknown> {
  return conn.sendRequest('initialize', { processId: process.pid, rootUri: 'file://' + dir, capabilities: {}, initializationOptions: init });
}

test('a serve that refuses to start: its showMessage is kept from the client, the initialize error says why', async () => {
  const ws = workspace();
  try {
    const notADir = path.join(ws.dir, 'not-a-folder');
    fs.writeFileSync(notADir, 'a file\n');
    const env = { SMITH_STATE_DIR: notADir };
    const reason = /state directory .*not-a-folder \(from SMITH_STATE_DIR\) cannot be used: .*not a directory; set SMITH_STATE_DIR to a directory/;

    // Without the strategy the client is told twice: serve's showMessage and the error.
    const plain = serve(ws.dir, [], env);
    await assert.rejects(initialize(plain.conn, ws.dir), (err: Error) => reason.test(err.message));
    assert.equal(plain.shown.length, 1, `serve says why in a showMessage too: ${JSON.stringify(plain.shown)}`);
    assert.match(plain.shown[0], reason);

    const start = new StartMessages();
    const held = serve(ws.dir, [], env, start);
    await assert.rejects(initialize(held.conn, ws.dir), (err: Error) => reason.test(err.message));
    // Anything serve sent still arrives before its process ends: wait for the end.
    held.conn.end();
    plain.conn.end();
    await Promise.all([held.exited, plain.exited]);
    assert.deepEqual(held.shown, [], 'the showMessage before the initialize error is not dispatched');
    const kept = start.takeKept();
    assert.equal(kept.length, 1, `kept for the output: ${JSON.stringify(kept)}`);
    assert.match(kept[0], /^smith could not start: /);
    assert.match(kept[0], reason);
    assert.deepEqual(start.takeKept(), [], 'taken once');
    held.conn.dispose();
    plain.conn.dispose();
  } finally {
    ws.cleanup();
  }
});

test('a serve that started: its showMessage reaches the client (a plain client\'s turn summary)', async () => {
  const ws = workspace();
  const up = await startUpstream(ws.dir, ['--protocol', 'v0']);
  const start = new StartMessages();
  const c = serve(ws.dir, ['--state-dir', ws.state], {}, start);
  try {
    await initialize(c.conn, ws.dir, { upstream: up.url });
    await c.conn.sendNotification('initialized', {});
    // A client that never calls smith/* is a plain one: the end of its turn is a showMessage.
    const res = await c.conn.sendRequest('workspace/executeCommand', { command: 'smith.chat', arguments: [{ message: 'rename total to subtotal in main.go' }] }) as { outcome: string };
    assert.equal(res.outcome, 'completed');
    await until('the turn summary shown', () => c.shown.length > 0);
    assert.match(c.shown[0], /^smith: turn completed/);
    assert.deepEqual(start.takeKept(), [], 'nothing kept from a start that succeeded');
  } finally {
    await c.conn.sendRequest('shutdown').catch(() => undefined);
    await c.conn.sendNotification('exit').catch(() => undefined);
    await c.exited;
    c.conn.dispose();
    await up.stop();
    ws.cleanup();
  }
});
