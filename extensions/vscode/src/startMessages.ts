// What smith serve says while it starts. A serve that cannot start (a state folder it cannot
// use, for example) sends window/showMessage with the reason and then answers initialize with
// the same reason as an error: plain LSP clients (smith.nvim, eglot) need the message, since some
// only log a failed initialize. The extension says a failed start itself, once, with the buttons
// that help; the language client would show serve's message as a second notification. So the
// messages that arrive before initialize is answered wait for the answer: a result lets them
// through, in order and before it, an error keeps them from the screen. Messages after the
// answer are never held.
import { Message, type MessageStrategy, type NotificationMessage } from 'vscode-jsonrpc';

const SHOW_MESSAGE = 'window/showMessage';

/** What a message strategy's handleMessage returns (vscode-jsonrpc's own type is not exported). */
type NotificationResult = ReturnType<MessageStrategy['handleMessage']>;

/**
 * A vscode-jsonrpc message strategy (the language client's connectionOptions.messageStrategy)
 * that holds serve's window/showMessage notifications until initialize is answered. The first
 * response a connection receives is initialize's: the client sends nothing else before it.
 */
export class StartMessages implements MessageStrategy {
  private held: NotificationMessage[] | undefined = [];
  private kept: string[] = [];

  /** A (re)start: hold again, on the new connection, until its initialize is answered. */
  starting(): void {
    this.held = [];
    this.kept = [];
  }

  /**
   * The texts of the messages serve sent during a start that failed: kept from the screen by an
   * initialize error, or still held when the connection ended without an answer. Taking them
   * empties the list.
   */
  takeKept(): string[] {
    const texts = [...this.kept, ...(this.held ?? []).map(messageText)];
    this.kept = [];
    if (this.held) this.held = [];
    return texts;
  }

  handleMessage(message: Message, next: (message: Message) => NotificationResult): NotificationResult {
    const held = this.held;
    if (held === undefined) return next(message);
    if (Message.isNotification(message) && message.method === SHOW_MESSAGE) {
      held.push(message);
      return;
    }
    if (!Message.isResponse(message)) return next(message);
    this.held = undefined;
    if (message.error) {
      this.kept.push(...held.map(messageText));
      return next(message);
    }
    const results = [...held, message].map((m) => next(m));
    return Promise.all(results).then(() => undefined);
  }
}

function messageText(m: NotificationMessage): string {
  const params = m.params as { message?: unknown } | undefined;
  return typeof params?.message === 'string' ? params.message : JSON.stringify(m.params);
}
