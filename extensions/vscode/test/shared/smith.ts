// Real processes for the tests: `smith upstream` (the embedded AgentSmithy-compatible server)
// and `smith serve` over stdio, spoken to with vscode-jsonrpc as the extension speaks to it.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import { SmithSession } from '../../src/session';

/** The smith binary: $SMITH_BIN, else bin/smith at the repository's root (make build). */
export function smithBin(): string {
  const bin = process.env.SMITH_BIN || path.resolve(__dirname, '../../../../../bin/smith');
  if (!fs.existsSync(bin)) throw new Error(`no smith binary at ${bin}: run "make build" at the repository root or set SMITH_BIN`);
  return bin;
}

export const MAIN_GO = `// Command shop prices a small basket of goods.
package main

import "fmt"

func main() {
	basket := []item{{"apples", 3, 0.5}, {"bread", 1, 2.25}, {"coffee", 2, 7.9}}
	fmt.Printf("subtotal: %.2f\\n", total(basket))
	fmt.Printf("with tax: %.2f\\n", withTax(total(basket), 0.2))
}

type item struct {
	name  string
	count int
	price float64
}

// withTax adds the tax rate to an amount.
func withTax(amount, rate float64) float64 {
	return amount * (1 + rate)
}

// total sums count × price over the basket.
func total(items []item) float64 {
	sum := 0.0
	for _, it := range items {
		sum += float64(it.count) * it.price
	}
	return sum
}
`;

/** A temporary workspace with main.go and go.mod; removed by the returned cleanup. */
export function workspace(): { dir: string; state: string; cleanup: () => void } {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'smith-vscode-'));
  const dir = path.join(base, 'shop');
  const state = path.join(base, 'state');
  fs.mkdirSync(dir);
  fs.mkdirSync(state);
  fs.writeFileSync(path.join(dir, 'main.go'), MAIN_GO);
  fs.writeFileSync(path.join(dir, 'go.mod'), 'module shop\n\ngo 1.22\n');
  return { dir, state, cleanup: () => fs.rmSync(base, { recursive: true, force: true }) };
}

const children = new Set<ChildProcess>();
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); });

function track(c: ChildProcess): ChildProcess {
  children.add(c);
  c.on('exit', () => children.delete(c));
  return c;
}

export interface Upstream { url: string; stderr: () => string; stop: () => Promise<void> }

/** Starts `smith upstream` on a free loopback port; resolves with its base URL. */
export async function startUpstream(dir: string, args: string[] = []): Promise<Upstream> {
  const c = track(spawn(smithBin(), ['upstream', '--workspace', dir, '--addr', '127.0.0.1:0', '--delay', '2ms', ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let err = '';
  c.stderr!.on('data', (d) => { err += d; });
  const url = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: c.stdout! });
    rl.once('line', (l) => resolve(l.trim()));
    c.once('exit', (code) => reject(new Error(`smith upstream exited ${code}: ${err}`)));
  });
  return {
    url,
    stderr: () => err,
    stop: () => new Promise<void>((resolve) => {
      if (c.exitCode !== null) return resolve();
      c.once('exit', () => resolve());
      c.kill('SIGTERM');
    }),
  };
}

export interface Serve {
  conn: MessageConnection;
  session: SmithSession;
  stderr: () => string;
  close: () => Promise<void>;
}

/**
 * Starts `smith serve` for the workspace and initializes it as a client that announces no
 * applyEdit (so applies are written on disk, where the test can read them).
 */
export async function startServe(dir: string, state: string, upstream: string, init: Record<string, unknown> = {}): Promise<Serve> {
  const c = track(spawn(smithBin(), ['serve', '--state-dir', state], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] }));
  let err = '';
  c.stderr!.on('data', (d) => { err += d; });
  const conn = createMessageConnection(new StreamMessageReader(c.stdout!), new StreamMessageWriter(c.stdin!));
  const session = new SmithSession(conn);
  conn.listen();
  await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: 'file://' + dir,
    capabilities: {},
    initializationOptions: { upstream, ...init },
  });
  await conn.sendNotification('initialized', {});
  return {
    conn,
    session,
    stderr: () => err,
    close: async () => {
      const exited = new Promise<void>((resolve) => (c.exitCode !== null ? resolve() : c.once('exit', () => resolve())));
      try {
        await conn.sendRequest('shutdown');
        await conn.sendNotification('exit');
      } catch { /* already gone */ }
      conn.dispose();
      c.stdin!.end();
      await exited;
    },
  };
}

/** Waits until pred() is true, polling; fails with `what` after 10 s. */
export async function until(what: string, pred: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
