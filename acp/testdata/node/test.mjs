// Drives a real `smith acp` with the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, client side) against the embedded upstream
// (`smith upstream`) on a real workspace in a temporary folder.
//
//   SMITH_BIN=/path/to/smith node test.mjs
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, basename, dirname } from "node:path";
import { Readable, Writable, PassThrough } from "node:stream";
import { createInterface } from "node:readline";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const SMITH = process.env.SMITH_BIN;
if (!SMITH) {
  console.error("set SMITH_BIN to the smith binary (make acptest does)");
  process.exit(2);
}

const MAIN_GO = `package main

import "fmt"

func main() {
	basket := []float64{1.5, 2.25}
	fmt.Printf("subtotal: %.2f\\n", total(basket))
	fmt.Printf("with tax: %.2f\\n", total(basket)*1.2)
}

// padding
// padding
// padding
// padding
// padding

func total(items []float64) float64 {
	var s float64
	for _, x := range items {
		s += x
	}
	return s
}
`;
const RENAMED = MAIN_GO.replace(/\btotal\b/g, "subtotal");
const RENAME = "rename total to subtotal in main.go";
const QUESTION = "what does this project do?";

// Every process and folder a test made goes when the tests end (the
// upstreams would otherwise keep node running).
const cleanups = [];
after(() => {
  for (const f of cleanups.reverse()) {
    try { f(); } catch {}
  }
});

function tempDir() {
  const d = mkdtempSync(join(tmpdir(), "smith-acp-node-"));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

// upstream starts `smith upstream` on a fresh workspace holding main.go.
async function upstream(args = []) {
  const ws = tempDir();
  writeFileSync(join(ws, "main.go"), MAIN_GO);
  const p = spawn(SMITH, ["upstream", "--workspace", ws, "--addr", "127.0.0.1:0", "--ping", "-1s", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  cleanups.push(() => p.kill());
  p.stderr.resume();
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: p.stdout }).once("line", resolve);
    p.once("exit", (code) => reject(new Error(`smith upstream exited with ${code}`)));
  });
  return { ws, url, state: tempDir(), read: () => readFileSync(join(ws, "main.go"), "utf8") };
}

// agent starts `smith acp` and connects the SDK's client to it. It records
// the session updates and every stdout line; `permit` answers permission
// requests; with fs, the client serves fs/* from its own buffers and never
// writes the disk, unless save (then a write goes to disk too, as an
// editor that saves what the agent writes); onWrite(params, st) runs
// before each fs/write_text_file, and what it throws fails that write.
function agent(up, { fs = false, save = false, onWrite, permit } = {}) {
  const child = spawn(SMITH, ["acp", "--upstream", up.url, "--workspace", up.ws, "--state-dir", up.state], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, HOME: tempDir(), XDG_CONFIG_HOME: tempDir() },
  });
  const exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  cleanups.push(() => child.kill());
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const lines = [];
  const tee = new PassThrough();
  createInterface({ input: child.stdout }).on("line", (l) => {
    lines.push(l);
    tee.write(l + "\n");
  });
  child.stdout.on("end", () => tee.end());
  const st = { updates: [], writes: new Map(), reads: [], permissions: [], lines, child, exited, stderr: () => stderr };
  const app = client({ name: "smith-node-test" })
    .onNotification(methods.client.session.update, ({ params }) => {
      st.updates.push(params);
    })
    .onRequest(methods.client.session.requestPermission, async (ctx) => {
      st.permissions.push(ctx.params);
      if (permit) return permit(ctx);
      return { outcome: { outcome: "selected", optionId: optionOf(ctx.params, "allow_once") } };
    })
    .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
      st.reads.push(params.path);
      if (st.writes.has(params.path)) return { content: st.writes.get(params.path) };
      return { content: readFileSync(params.path, "utf8") };
    })
    .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
      if (onWrite) onWrite(params, st);
      st.edit(params.path, params.content);
      return {};
    });
  // edit puts text in a buffer (and on disk, with save): what a write
  // through fs/write_text_file does, and what the user does by typing.
  st.edit = (path, text) => {
    st.writes.set(path, text);
    if (save) {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text);
    }
  };
  const input = Writable.toWeb(child.stdin);
  const conn = app.connect(ndJsonStream(input, Readable.toWeb(tee)));
  st.agent = conn.agent;
  st.raw = (line) => child.stdin.write(line + "\n");
  st.init = () => st.agent.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: fs ? { fs: { readTextFile: true, writeTextFile: true } } : {},
  });
  st.session = async () => {
    await st.init();
    const s = await st.agent.request(methods.agent.session.new, { cwd: up.ws, mcpServers: [] });
    return s.sessionId;
  };
  st.prompt = (sessionId, text) => st.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  st.text = () => st.updates.filter((u) => u.update.sessionUpdate === "agent_message_chunk" && u.update.content.type === "text").map((u) => u.update.content.text).join("");
  st.calls = () => {
    const m = new Map();
    for (const { update: u } of st.updates) {
      if (u.sessionUpdate === "tool_call") m.set(u.toolCallId, { ...u });
      if (u.sessionUpdate === "tool_call_update") m.set(u.toolCallId, { ...(m.get(u.toolCallId) ?? {}), ...Object.fromEntries(Object.entries(u).filter(([, v]) => v !== undefined && v !== null)) });
    }
    return [...m.values()].filter((c) => c.toolCallId.startsWith("change-"));
  };
  // close ends stdin and checks that smith exits and wrote only protocol.
  st.close = async () => {
    child.stdin.end();
    const code = await exited;
    assert.equal(code, 0, `smith acp exited with ${code}; stderr:\n${stderr}`);
    for (const [i, l] of lines.entries()) {
      let m;
      assert.doesNotThrow(() => (m = JSON.parse(l)), `stdout line ${i + 1} is not JSON: ${l}`);
      assert.equal(m.jsonrpc, "2.0", `stdout line ${i + 1} is not JSON-RPC 2.0: ${l}`);
    }
  };
  return st;
}

function optionOf(req, kind) {
  return req.options.find((o) => o.kind === kind).optionId;
}

function contentText(call) {
  return (call.content ?? []).filter((c) => c.type === "content").map((c) => c.content.text).join("");
}

async function until(what, cond) {
  const end = Date.now() + 20000;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("initialize negotiates protocol version 1", async () => {
  const up = await upstream(["--protocol", "v0"]);
  const a = agent(up);
  for (const asked of [1, 7]) {
    const r = await a.agent.request(methods.agent.initialize, { protocolVersion: asked, clientCapabilities: {} });
    assert.equal(r.protocolVersion, 1);
    assert.equal(r.agentCapabilities.loadSession, true);
    assert.equal(r.agentCapabilities.promptCapabilities.embeddedContext, true);
    assert.equal(r.agentInfo.name, "smith");
  }
  await a.close();
});

test("a text turn streams chunks in order and ends with end_turn", async () => {
  const up = await upstream(["--protocol", "v0"]);
  const a = agent(up);
  const sid = await a.session();
  const r = await a.prompt(sid, QUESTION);
  assert.equal(r.stopReason, "end_turn");
  const chunks = a.updates.filter((u) => u.update.sessionUpdate === "agent_message_chunk");
  assert.ok(chunks.length >= 3, `only ${chunks.length} chunks`);
  assert.ok(chunks.every((u) => u.sessionId === sid));
  assert.match(a.text(), /^I'm the smith demo agent\. I can change files when you ask in plain words/);
  assert.match(a.text(), /rename total to sum in calc\.go/);
  await a.close();
});

test("rename: an edit tool call with the diff; allow writes the file byte for byte", async () => {
  const up = await upstream(["--protocol", "v0"]);
  const a = agent(up, {
    permit: ({ params }) => {
      const diff = params.toolCall.content.find((c) => c.type === "diff");
      assert.equal(params.toolCall.kind, "edit");
      assert.equal(diff.path, join(up.ws, "main.go"));
      assert.equal(diff.oldText, MAIN_GO);
      assert.equal(diff.newText, RENAMED);
      assert.equal(up.read(), MAIN_GO, "written before permission");
      return { outcome: { outcome: "selected", optionId: optionOf(params, "allow_once") } };
    },
  });
  const sid = await a.session();
  assert.equal((await a.prompt(sid, RENAME)).stopReason, "end_turn");
  assert.equal(a.permissions.length, 1);
  assert.equal(up.read(), RENAMED);
  const calls = a.calls();
  assert.equal(calls.length, 1);
  assert.equal(calls[0].kind, "edit");
  assert.equal(calls[0].status, "completed");
  await a.close();
});

test("rename: reject leaves the file untouched", async () => {
  const up = await upstream(["--protocol", "v0"]);
  const a = agent(up, { permit: ({ params }) => ({ outcome: { outcome: "selected", optionId: optionOf(params, "reject_once") } }) });
  const sid = await a.session();
  assert.equal((await a.prompt(sid, RENAME)).stopReason, "end_turn");
  assert.equal(up.read(), MAIN_GO);
  const calls = a.calls();
  assert.equal(calls.length, 1);
  assert.equal(calls[0].status, "failed");
  assert.match(contentText(calls[0]), /rejected/);
  await a.close();
});

test("with fs capabilities the write goes through fs/write_text_file and smith writes nothing", async () => {
  const up = await upstream(["--protocol", "v0"]);
  const a = agent(up, { fs: true });
  const sid = await a.session();
  assert.equal((await a.prompt(sid, RENAME)).stopReason, "end_turn");
  assert.equal(a.writes.get(join(up.ws, "main.go")), RENAMED);
  assert.ok(a.reads.length > 0, "never read through fs/read_text_file");
  assert.equal(up.read(), MAIN_GO, "smith wrote the disk itself");
  assert.equal(a.calls()[0].status, "completed");
  await a.close();
});

test("with fs capabilities a new file goes through fs/write_text_file too; smith creates nothing on disk", async () => {
  const up = await upstream(["--protocol", "v0"]);
  const a = agent(up, { fs: true });
  const sid = await a.session();
  assert.equal((await a.prompt(sid, 'create notes/todo.md with "# Todo"')).stopReason, "end_turn");
  const path = join(up.ws, "notes", "todo.md");
  assert.equal(a.writes.get(path), "# Todo\n");
  assert.equal(existsSync(path), false, "smith created the file on disk itself");
  const [call] = a.calls();
  assert.equal(call.status, "completed");
  const diff = (call.content ?? []).find((c) => c.type === "diff");
  assert.equal(diff?.oldText ?? null, null, "a new file's diff has oldText null");
  await a.close();
});

test("a conflict is a failed tool call and nothing is written", async () => {
  const up = await upstream(["--protocol", "v0"]);
  // A line of each hunk is edited: smith's watcher may re-plan the change
  // before the allow arrives, and an edit outside the hunks would then
  // (rightly) let it apply around the edit.
  const edited = MAIN_GO.replace("total(basket)*1.2)", "total(basket)*1.25) // edited meanwhile")
    .replace("func total(items []float64)", "func total(values []float64)");
  assert.notEqual(edited, MAIN_GO);
  const a = agent(up, {
    permit: ({ params }) => {
      writeFileSync(join(up.ws, "main.go"), edited);
      return { outcome: { outcome: "selected", optionId: optionOf(params, "allow_once") } };
    },
  });
  const sid = await a.session();
  assert.equal((await a.prompt(sid, RENAME)).stopReason, "end_turn");
  assert.equal(up.read(), edited);
  const [call] = a.calls();
  assert.equal(call.status, "failed");
  assert.match(contentText(call), /changed|no longer match/);
  // What happened, in words: not the engine's kind of error in front.
  assert.doesNotMatch(contentText(call), /change conflict|not possible in this state/);
  await a.close();
});

test("cancel mid-stream: exactly one cancelled, then the next prompt works", async () => {
  const up = await upstream(["--protocol", "v0", "--delay", "100ms"]);
  const a = agent(up);
  const sid = await a.session();
  const first = a.prompt(sid, QUESTION);
  await until("the first chunk", () => a.text() !== "");
  await a.agent.notify(methods.agent.session.cancel, { sessionId: sid });
  assert.equal((await first).stopReason, "cancelled");
  assert.equal((await a.prompt(sid, RENAME)).stopReason, "end_turn");
  assert.equal(up.read(), RENAMED);
  assert.equal(a.lines.filter((l) => l.includes('"stopReason":"cancelled"')).length, 1);
  await a.close();
});

test("cancel with a permission request open: cancelled, not end_turn; nothing written", async () => {
  const up = await upstream(["--protocol", "v0"]);
  let asked;
  const askedP = new Promise((r) => (asked = r));
  let release;
  const released = new Promise((r) => (release = r));
  const a = agent(up, {
    permit: async () => {
      asked();
      await released;
      return { outcome: { outcome: "cancelled" } };
    },
  });
  const sid = await a.session();
  const first = a.prompt(sid, RENAME);
  await askedP;
  await a.agent.notify(methods.agent.session.cancel, { sessionId: sid });
  release();
  assert.equal((await first).stopReason, "cancelled");
  assert.equal(up.read(), MAIN_GO);
  assert.equal((await a.prompt(sid, QUESTION)).stopReason, "end_turn");
  assert.equal(a.lines.filter((l) => l.includes('"stopReason"')).length, 2);
  await a.close();
});

test("session/load replays the dialog", async () => {
  const up = await upstream(["--protocol", "v2"]);
  const a = agent(up, { permit: () => assert.fail("asked permission for a change the server wrote") });
  const sid = await a.session();
  assert.equal((await a.prompt(sid, RENAME)).stopReason, "end_turn");
  assert.equal(up.read(), RENAMED);
  assert.equal(a.calls()[0].status, "completed");
  const answer = a.text();
  await a.close();

  const b = agent(up);
  await b.init();
  await b.agent.request(methods.agent.session.load, { sessionId: sid, cwd: up.ws, mcpServers: [] });
  const users = b.updates.filter((u) => u.update.sessionUpdate === "user_message_chunk").map((u) => u.update.content.text);
  assert.deepEqual(users, [RENAME]);
  const squash = (s) => s.replace(/\s+/g, "");
  assert.equal(squash(b.text()), squash(answer));
  assert.ok(b.updates.some((u) => u.update.sessionUpdate === "tool_call" && u.update.kind === "edit"));
  await b.close();
});

test("bad input gets JSON-RPC errors and the connection stays up", async () => {
  const up = await upstream(["--protocol", "v0", "--delay", "50ms"]);
  const a = agent(up);
  const sid = await a.session();
  await assert.rejects(a.prompt("nope", "hi"), (e) => e.code === -32602 && /unknown session "nope"/.test(e.message));
  await assert.rejects(a.agent.request(methods.agent.session.new, { cwd: tempDir(), mcpServers: [] }), /outside the workspace/);
  await assert.rejects(
    a.agent.request(methods.agent.session.prompt, { sessionId: sid, prompt: [{ type: "text", text: "read" }, { type: "resource_link", name: "passwd", uri: "file:///etc/passwd" }] }),
    (e) => e.code === -32602 && /outside the workspace/.test(e.message),
  );
  a.raw("{not json");
  const first = a.prompt(sid, QUESTION);
  await until("the first chunk", () => a.text() !== "");
  await assert.rejects(a.prompt(sid, "another"), (e) => e.code === -32600 && /already running a prompt/.test(e.message));
  assert.equal((await first).stopReason, "end_turn");
  assert.ok(a.lines.some((l) => l.includes('"code":-32700')), "no Parse error for the malformed line");
  const s2 = await a.agent.request(methods.agent.session.new, { cwd: up.ws, mcpServers: [] });
  assert.ok(s2.sessionId);
  await a.close();
});

test("a failed multi-file write takes back only what smith wrote; a file changed since is left as it is and named", async () => {
  const up = await upstream(["--protocol", "v0"]);
  const files = { "gone.txt": "gone 1\ngone 2\n", "b.txt": "b1\nb2\n", "c.txt": "c1\nc2\n" };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(up.ws, name), text);
  // smith apply journals the patch as one undo group: /undo writes the
  // three files back through the client at once (gone.txt created).
  const patch = [
    "--- a/gone.txt", "+++ /dev/null", "@@ -1,2 +0,0 @@", "-gone 1", "-gone 2",
    "--- a/b.txt", "+++ b/b.txt", "@@ -1,2 +1,2 @@", "-b1", "+B1", " b2",
    "--- a/c.txt", "+++ b/c.txt", "@@ -1,2 +1,2 @@", "-c1", "+C1", " c2", "",
  ].join("\n");
  const applied = spawnSync(SMITH, ["apply", "-"], {
    cwd: up.ws, input: patch,
    env: { ...process.env, HOME: tempDir(), XDG_CONFIG_HOME: tempDir(), SMITH_STATE_DIR: up.state },
  });
  assert.equal(applied.status, 0, `smith apply: ${applied.stdout}${applied.stderr}`);
  const typed = "typed by the user\n";
  const order = [];
  const a = agent(up, {
    fs: true, save: true,
    onWrite: (params, st) => {
      order.push(basename(params.path));
      if (basename(params.path) !== "c.txt") return;
      st.edit(join(up.ws, "b.txt"), typed); // the user, between smith's writes
      throw new Error("the disk is full");
    },
  });
  const sid = await a.session();
  assert.equal((await a.prompt(sid, "/undo")).stopReason, "end_turn");
  assert.deepEqual(order.slice(0, 3), ["gone.txt", "b.txt", "c.txt"], a.text());
  assert.equal(readFileSync(join(up.ws, "b.txt"), "utf8"), typed, "the user's text was overwritten");
  assert.equal(a.writes.get(join(up.ws, "b.txt")), typed, "the user's buffer was overwritten");
  assert.equal(existsSync(join(up.ws, "gone.txt")), false, "the file smith created was not removed");
  assert.equal(readFileSync(join(up.ws, "c.txt"), "utf8"), "C1\nc2\n");
  const said = a.text();
  assert.match(said, /^\/undo failed: .*c\.txt: the client answered: .*the disk is full/);
  assert.ok(said.includes("b.txt changed since smith wrote it; left as it is"), said);
  assert.ok(said.includes("gone.txt was removed (smith had created it)"), said);
  assert.ok(!said.includes(up.ws), `the answer names a file by its absolute path: ${said}`);
  await a.close();
});
