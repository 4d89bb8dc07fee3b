import ts from 'typescript';
import { ROUTINE } from './routine-code.mjs';
const root = '/work/main', dir = root + '/.agora-typecheck';
const decl = (await import('fs')).readFileSync('src/routine/generate.ts','utf8').match(/export const ROUTINE_DECLARATION = `([\s\S]*?)`;/)[1];
const files = new Map([[dir+'/routine.ts', ROUTINE], [dir+'/agora-agents.d.ts', decl], [dir+'/globals.d.ts', 'interface AbortSignal { readonly aborted: boolean }']]);
const options = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, lib: ['lib.es2022.d.ts'], types: [], strict: true, noEmit: true, skipLibCheck: true };
const base = ts.createCompilerHost(options, true); const cache = new Map();
const host = { ...base, getCurrentDirectory: () => root, fileExists: n => files.has(n) || base.fileExists(n), readFile: n => files.get(n) ?? base.readFile(n), directoryExists: n => n === dir || base.directoryExists(n),
 getSourceFile(n, l, e, s) { const t = files.get(n); if (t !== undefined) return ts.createSourceFile(n, t, l, true); let f = cache.get(n); if (!f) { f = base.getSourceFile(n, l, e, s); cache.set(n, f); } return f; } };
for (let i = 0; i < 8; i++) {
  const t0 = performance.now();
  const p = ts.createProgram([...files.keys()], options, host);
  const t1 = performance.now();
  const g = p.getGlobalDiagnostics();
  const t2 = performance.now();
  const d = p.getSemanticDiagnostics(p.getSourceFile(dir+'/routine.ts'));
  const t3 = performance.now();
  console.log(i, 'create', (t1-t0)|0, 'init', (t2-t1)|0, 'check', (t3-t2)|0, d.length, g.length);
}
