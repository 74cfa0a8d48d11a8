// The chat view's page. A pure function so that the webview test loads exactly the page the
// extension shows, with its Content-Security-Policy.

export interface PageSources {
  /** The webview's cspSource (vscode-webview://...), or the test server's origin. */
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  nonce: string;
}

export function nonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 32; i++) s += chars.charAt(Math.floor(Math.random() * chars.length));
  return s;
}

export function chatHtml(p: PageSources): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${p.cspSource}; img-src ${p.cspSource} https: data:; script-src 'nonce-${p.nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${p.styleUri}" rel="stylesheet">
<title>smith chat</title>
</head>
<body>
<header id="dialogs">
  <select id="dialog-select" title="Switch dialog" aria-label="Dialog"></select>
  <button id="dialog-new" title="New dialog" aria-label="New dialog">+</button>
  <button id="dialog-rename" title="Rename dialog" aria-label="Rename dialog">✎</button>
  <button id="dialog-delete" title="Delete dialog" aria-label="Delete dialog">✕</button>
</header>
<main id="messages" aria-live="polite"></main>
<footer id="composer">
  <div id="context-row">
    <label id="context-label" title="Send the current file (and selection) with the message">
      <input type="checkbox" id="context-toggle" checked> <span id="context-chip" class="chip"></span>
    </label>
    <span id="busy" class="busy" hidden><span class="spinner"></span> working…</span>
  </div>
  <textarea id="input" rows="3" placeholder="Ask smith… (Enter sends, Shift+Enter for a new line)" aria-label="Message"></textarea>
  <div id="buttons">
    <button id="send" title="Send (Enter)">Send</button>
    <button id="stop" title="Stop the running turn" disabled>Stop</button>
  </div>
</footer>
<script nonce="${p.nonce}" src="${p.scriptUri}"></script>
</body>
</html>`;
}
