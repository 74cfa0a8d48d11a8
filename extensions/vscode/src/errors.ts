// What a user can do about an error from smith serve: the message it carries (smith's messages
// say what happened and what to do) and the buttons that help, chosen by the stable code.
import { ErrorCodes } from './protocol';
import { errorMessage } from './session';

export type Action = 'Retry' | 'Open settings' | 'Show output' | 'Review changes' | 'Stop';

export interface Advice { message: string; actions: Action[] }

export function errorCode(err: unknown): number | undefined {
  if (err && typeof err === 'object' && 'code' in err && typeof (err as { code: unknown }).code === 'number') {
    return (err as { code: number }).code;
  }
  return undefined;
}

/** Advice for an error of the operation named by `what` ("chat", "apply c1", ...). */
export function advise(what: string, err: unknown): Advice {
  const raw = errorMessage(err);
  const code = errorCode(err);
  switch (code) {
    case ErrorCodes.UpstreamUnreachable:
      return { message: `smith: the chat server is unreachable (${what}): ${raw}. Start it, or set smith.upstream.`, actions: ['Retry', 'Open settings', 'Show output'] };
    case ErrorCodes.UpstreamError:
      return { message: `smith: the chat server answered with an error (${what}): ${raw}`, actions: ['Retry', 'Show output'] };
    case ErrorCodes.DialogBusy:
      return { message: `smith: this dialog is busy with another turn (${what}). Wait for it or stop it, then retry.`, actions: ['Retry', 'Stop'] };
    case ErrorCodes.TooManyTurns:
      return { message: `smith: too many turns are running (${what}). Wait for one to end, then retry.`, actions: ['Retry'] };
    case ErrorCodes.Conflict:
      return { message: `smith: conflict (${what}): ${raw}. The file changed since the change was planned; review it again.`, actions: ['Review changes', 'Show output'] };
    default:
      return { message: `smith: ${what} failed: ${raw}`, actions: ['Show output'] };
  }
}

/**
 * Advice for a smith serve that did not start: its reason, which says what to do (serve's
 * refusals name the path, the setting it came from and the fix), and Retry for after the fix.
 */
export function adviseStart(err: unknown): Advice {
  return { message: `smith: smith serve could not start: ${errorMessage(err)}`, actions: ['Retry', 'Show output'] };
}
