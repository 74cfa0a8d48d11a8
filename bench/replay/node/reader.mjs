// The anchor of bench/replay.sh: how a JavaScript client reads an
// AgentSmithy v2 chat stream. Bytes arrive in chunks (here from a file, in a
// client from fetch's body reader), go through a streaming TextDecoder into
// eventsource-parser, and every event's data is JSON.parse'd and handled by
// a switch on its type, keeping what a chat view keeps: the answer text, the
// reasoning, the tool calls, the edited files. It prints one summary line.
//
//   node reader.mjs FILE.sse
import { createReadStream } from 'node:fs';
import { createParser } from 'eventsource-parser';

const state = { dialogId: '', text: '', reasoning: '', toolCalls: [], edits: [], done: false, events: 0, other: 0 };

function handle(msg) {
  state.events++;
  if (msg.dialog_id) state.dialogId = msg.dialog_id;
  switch (msg.type) {
    case 'chat':
      state.text += msg.content ?? '';
      break;
    case 'reasoning':
      state.reasoning += msg.content ?? '';
      break;
    case 'tool_call':
      state.toolCalls.push({ name: msg.name, args: msg.args });
      break;
    case 'file_edit':
      state.edits.push({ file: msg.file, diff: msg.diff });
      break;
    case 'done':
      state.done = true;
      break;
    case 'error':
      throw new Error(msg.error ?? 'stream error');
    default:
      state.other++;
  }
}

const parser = createParser({
  onEvent(ev) {
    handle(JSON.parse(ev.data));
  },
});

const decoder = new TextDecoder();
const input = createReadStream(process.argv[2], { highWaterMark: 64 * 1024 });
for await (const chunk of input) {
  parser.feed(decoder.decode(chunk, { stream: true }));
}
parser.feed(decoder.decode());
if (!state.done) {
  console.error('reader: the stream ended without done');
  process.exit(1);
}
console.log(`${state.events} events, ${state.text.length} chars of text, ${state.toolCalls.length} tool calls, ${state.edits.length} edits`);
