// Finding the smith binary before starting it, so that a missing one is one clear
// notification with the install command instead of a language client's restart loop.
import * as fs from 'node:fs';
import * as path from 'node:path';

// The module is not published yet: smith installs from a checkout of its repository.
export const INSTALL_COMMAND = 'CGO_ENABLED=0 go install ./cmd/smith';

function executable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The absolute path of the binary named by the setting (a path, or a name looked up on PATH). */
export function findSmith(setting: string, envPath = process.env.PATH ?? ''): string | undefined {
  const name = setting.trim() || 'smith';
  if (name.includes('/') || name.includes(path.sep)) {
    return executable(name) ? path.resolve(name) : undefined;
  }
  for (const dir of envPath.split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    if (executable(p)) return p;
  }
  return undefined;
}
