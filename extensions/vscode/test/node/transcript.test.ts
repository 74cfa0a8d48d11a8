// The transcript and error advice on their own: shapes the server sends, folded as the chat
// view shows them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Transcript, TranscriptSync, applyPatch, toolDetail } from '../../src/transcript';
import { advise } from '../../src/errors';
import type { EventParams, Event } from '../../src/protocol';

let seq = 0;
const ev = (event: Omit<Event, 'seq'>, dialogId = 'd1'): EventParams => ({ dialogId, turnId: 't1', seq: ++seq, event: { ...event, seq } as Event });

test('events fold into one answer: text, folded reasoning, tool lines, citations, the end', () => {
  const t = new Transcript();
  t.begin('where is total used?', 'main.go:8-9');
  t.apply(ev({ type: 'notice', notice: { kind: 'classification', message: 'edit' } }));
  t.apply(ev({ type: 'reasoning', text: 'Look for ' }));
  t.apply(ev({ type: 'reasoning', text: 'callers.' }));
  t.apply(ev({ type: 'toolCall', toolCall: { id: 'x1', name: 'grep', args: '{"pattern":"total("}' } }));
  assert.equal(t.state.messages[1].tools[0].status, 'running');
  t.apply(ev({ type: 'toolResult', toolResult: { id: 'x1', name: 'grep' } }));
  t.apply(ev({ type: 'text', text: 'In `main`' }));
  t.apply(ev({ type: 'text', text: ' twice.' }));
  t.apply(ev({ type: 'citation', citation: { file: 'main.go', title: 'main.go' } }));
  assert.equal(t.apply(ev({ type: 'text', text: 'other dialog' }, 'd2')), false, 'events of another dialog are not mixed in');
  t.apply(ev({ type: 'turnEnd', turnEnd: { outcome: 'completed' } }));
  const [user, answer] = t.state.messages;
  assert.equal(user.context, 'main.go:8-9');
  assert.equal(answer.text, 'In `main` twice.');
  assert.equal(answer.reasoning, 'Look for callers.');
  assert.deepEqual(answer.tools, [{ id: 'x1', name: 'grep', status: 'done', detail: 'total(' }]);
  assert.equal(answer.citations.length, 1);
  assert.deepEqual(answer.notices, [], 'the classification is not shown');
  assert.equal(answer.outcome, 'completed');
  assert.equal(t.state.busy, false);
});

test('a failed tool and an interrupted turn say why', () => {
  const t = new Transcript();
  t.begin('go');
  t.apply(ev({ type: 'toolCall', toolCall: { name: 'read_file', args: { path: 'gone.go' } } }));
  t.apply(ev({ type: 'toolResult', toolResult: { name: 'read_file', error: 'no such file' } }));
  t.apply(ev({ type: 'turnEnd', turnEnd: { outcome: 'interrupted', reason: 'idle timeout after 60s' } }));
  const a = t.state.messages[1];
  assert.deepEqual(a.tools, [{ id: undefined, name: 'read_file', status: 'error', detail: 'no such file' }]);
  assert.deepEqual(a.errors, ['idle timeout after 60s']);
});

test('a history page becomes messages; no empty answer is left at the end', () => {
  const t = new Transcript();
  t.loadHistory('d9', {
    events: [
      { type: 'user', content: 'rename total' },
      { type: 'reasoning', content: 'read it first' },
      { type: 'tool_call', name: 'read_file', args: { path: 'main.go' } },
      { type: 'chat', content: 'Done.' },
      { type: 'file_edit', file: 'main.go' },
      { type: 'user', content: 'thanks' },
    ],
  });
  assert.equal(t.state.dialogId, 'd9');
  assert.deepEqual(t.state.messages.map((m) => m.role), ['user', 'assistant', 'user']);
  const a = t.state.messages[1];
  assert.equal(a.text, 'Done.');
  assert.equal(a.reasoning, 'read it first');
  assert.equal(a.tools[0].detail, 'main.go');
  assert.deepEqual(a.changes, [{ path: 'main.go', kind: 'modify', appliedUpstream: true }]);
  t.loadHistory('d10', null);
  assert.deepEqual(t.state.messages, []);
});

test('toolDetail picks the argument a person recognises', () => {
  assert.equal(toolDetail({ path: 'a/b.go', content: 'x' }), 'a/b.go');
  assert.equal(toolDetail('{"query":"how"}'), 'how');
  assert.equal(toolDetail('not json'), 'not json');
  assert.equal(toolDetail({ n: 1 }), undefined);
  assert.equal(toolDetail(undefined), undefined);
});

test('advice: each error a user can act on gets its buttons', () => {
  assert.deepEqual(advise('chat', { code: -32010, message: 'busy' }).actions, ['Retry', 'Stop']);
  assert.deepEqual(advise('chat', { code: -32018, message: 'HTTP 500' }).actions, ['Retry', 'Show output']);
  const other = advise('preview c1', new Error('boom'));
  assert.equal(other.message, 'smith: preview c1 failed: boom');
  assert.deepEqual(other.actions, ['Show output']);
});

test('while a turn streams, the view is sent what changed, not the whole transcript', () => {
  const t = new Transcript();
  // A long dialog already in the view.
  for (let i = 0; i < 200; i++) {
    t.begin(`question ${i}`);
    t.apply(ev({ type: 'text', text: `answer ${i} `.repeat(20) }));
    t.apply(ev({ type: 'turnEnd', turnEnd: { outcome: 'completed' } }));
  }
  const sync = new TranscriptSync();
  sync.full(t);
  const view = structuredClone(t.state);
  const wholeSize = JSON.stringify(t.state).length;

  t.begin('rename total', 'main.go');
  const sizes: number[] = [];
  const send = () => {
    const p = sync.patch(t);
    assert.ok(p, 'a turn in the same transcript is sent as a patch');
    sizes.push(JSON.stringify(p).length);
    applyPatch(view, p);
    assert.deepEqual(view, t.state, 'the view holds what the host holds');
  };
  send();
  t.apply(ev({ type: 'reasoning', text: 'Read it ' }));
  t.apply(ev({ type: 'reasoning', text: 'first.' }));
  send();
  t.apply(ev({ type: 'toolCall', toolCall: { id: 'x1', name: 'read_file', args: { path: 'main.go' } } }));
  send();
  t.apply(ev({ type: 'toolResult', toolResult: { id: 'x1', name: 'read_file' } }));
  for (let i = 0; i < 50; i++) {
    t.apply(ev({ type: 'text', text: `word${i} ` }));
    if (i % 5 === 0) send();
  }
  const p = sync.patch(t)!;
  assert.deepEqual(p.set, [], 'only text arrived: nothing is sent whole');
  assert.deepEqual(p.append.map((a) => a.index), [401]);
  assert.equal(p.append[0].text, 'word46 word47 word48 word49 ');
  applyPatch(view, p);
  t.apply(ev({ type: 'turnEnd', turnEnd: { outcome: 'completed' } }));
  send();
  assert.equal(t.state.busy, false);
  assert.ok(Math.max(...sizes) < 1000, `each update is small (${Math.max(...sizes)} bytes), the transcript is ${wholeSize}`);
  assert.ok(wholeSize > 50 * Math.max(...sizes));

  // Another dialog, a history, a new transcript: the view gets it whole.
  t.reset('d2');
  assert.equal(sync.patch(t), undefined);
  sync.full(t);
  assert.ok(sync.patch(t));
  assert.equal(sync.patch(new Transcript()), undefined);
});
