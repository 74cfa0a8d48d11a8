// The smith serve protocol as this extension reads it (docs/protocol.md is the authority;
// hunk ranges are the engine's structured fields, never parsed out of "@@" headers).

export type HunkStatus = 'pending' | 'applied' | 'appliedUpstream' | 'rejected' | 'conflict' | 'stale' | 'undone';

export interface Hunk {
  id: string;
  header: string;
  status: HunkStatus;
  match?: string;
  offset?: number;
  /** 1-based start of the old side in the file as it is now (for an applied hunk: in the original). */
  oldStart?: number;
  oldLines?: number;
  /** 1-based start of the new side in the result (for an applied hunk: where its text is now). */
  newStart?: number;
  newLines?: number;
  text?: string;
  reason?: string;
}

export interface Change {
  id: string;
  dialogId: string;
  turnId: string;
  path: string;
  oldPath?: string;
  kind: 'create' | 'modify' | 'delete' | 'rename';
  status: HunkStatus;
  reason?: string;
  hunks: Hunk[];
  diff?: string;
}

export interface Preview {
  path: string;
  original: string;
  result: string;
  diff: string;
  hunks?: Hunk[];
  status?: HunkStatus;
}

export interface Dialog {
  id: string;
  title?: string;
  createdAt?: string;
  updatedAt?: string;
  current?: boolean;
  busy?: boolean;
}

export interface Status {
  workspace: string;
  upstream: string;
  dialect: string;
  reachable: boolean;
  error?: string;
  server?: unknown;
  currentDialog?: string;
  runningTurns: number;
  pendingChanges: number;
  stateDir: string;
}

export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }

export interface ChatParams {
  dialogId?: string;
  message: string;
  context?: { uri: string; selection?: Range };
}

export type Outcome = 'completed' | 'error' | 'cancelled' | 'interrupted';

export interface ChatResult {
  dialogId: string;
  turnId: string;
  outcome: Outcome;
  text: string;
  changes: string[];
  textTruncated?: boolean;
  dialect?: string;
  protocol?: string;
}

export interface ToolCall { id?: string; name: string; args?: unknown; status?: string }
export interface ToolResult { id?: string; name?: string; result?: unknown; error?: string; durationMs?: number }
export interface Citation { file?: string; section?: string; chapter?: string; title?: string; url?: string; score?: number; snippet?: string }
export interface Notice { kind: string; code?: string; message?: string }

export interface Event {
  type: 'text' | 'reasoning' | 'segment' | 'toolCall' | 'toolResult' | 'change' | 'citation' | 'notice' | 'error' | 'turnEnd' | 'violation';
  seq: number;
  text?: string;
  segment?: { block: string; phase: string; id?: string };
  toolCall?: ToolCall;
  toolResult?: ToolResult;
  change?: { path: string; kind: string; appliedUpstream?: boolean; reason?: string };
  citation?: Citation;
  notice?: Notice;
  error?: { code: string; message: string };
  turnEnd?: { outcome: Outcome; reason?: string };
  violation?: { kind: string; message: string };
}

export interface EventParams { dialogId: string; turnId: string; seq: number; event: Event }

/** Error codes of smith serve (docs/protocol.md, "Error codes"). */
export const ErrorCodes = {
  DialogBusy: -32010,
  TooManyTurns: -32011,
  MessageTooLong: -32012,
  UnknownChange: -32013,
  UnknownDialog: -32014,
  Conflict: -32015,
  Unsupported: -32016,
  UpstreamUnreachable: -32017,
  UpstreamError: -32018,
  RequestCancelled: -32800,
} as const;
