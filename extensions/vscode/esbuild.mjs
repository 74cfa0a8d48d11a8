// Bundles the extension (Node, CommonJS, `vscode` external), the chat view's script (browser)
// and the tests (Node) into out/. `--production` minifies the two shipped bundles.
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';

const production = process.argv.includes('--production');
const tests = (dir) => readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => `${dir}/${f}`);

await Promise.all([
  esbuild.build({
    entryPoints: ['src/extension.ts'],
    bundle: true, platform: 'node', format: 'cjs', target: 'node20',
    external: ['vscode'], outfile: 'out/extension.js',
    sourcemap: !production, minify: production, logLevel: 'warning',
  }),
  esbuild.build({
    entryPoints: ['webview/main.ts'],
    bundle: true, platform: 'browser', format: 'iife', target: 'chrome120',
    outfile: 'out/webview.js', sourcemap: false, minify: production, logLevel: 'warning',
  }),
  ...(production ? [] : [
    esbuild.build({
      entryPoints: [...tests('test/node'), ...tests('test/webview'), ...tests('test/e2e')],
      bundle: true, platform: 'node', format: 'cjs', target: 'node20',
      external: ['playwright-core'], outdir: 'out/test', outbase: 'test', logLevel: 'warning',
    }),
  ]),
]);
