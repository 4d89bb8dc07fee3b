import ts from 'typescript';
import { join } from 'node:path';
const root = '/work/main';
const vdir = join(root, '.agora-typecheck');
const files = new Map([
  [join(vdir,'agora-agents.d.ts'), `declare module 'agora-agents' { import type { z } from 'zod'; export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }; export type JsonObject = { [key: string]: JsonValue };
 export type RoutineContext = { conversation: { id: string | null; turn: number; state: JsonObject }; tools: Record<string, (input: unknown) => Promise<unknown>>; };
 export type Routine = { readonly kind: 'routine'; handle(body: any, context: RoutineContext): unknown };
 export function defineRoutine<I extends z.ZodType = z.ZodType<any>, O extends z.ZodType = z.ZodType<any>>(d: { input?: I; output?: O; handle(body: z.output<I>, context: RoutineContext): z.input<O> | Promise<z.input<O>> }): Routine; }`],
  [join(vdir,'routine.ts'), `import { defineRoutine } from 'agora-agents'; import { z } from 'zod';
export default defineRoutine({ input: z.object({ value: z.number(), from: z.string(), to: z.string() }), output: z.union([z.object({ value: z.number(), unit: z.string() }), z.object({ error: z.string() })]),
 async handle(body, context) { const r = await context.tools.convert_units({ ...body }); const x: number = body.value; return { value: x, unit: body.to }; } });`],
  [join(vdir,'check.ts'), `import routine from './routine'; import type { Routine } from 'agora-agents'; const _r: Routine = routine; export {};`],
]);
const options = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, strict: true, noEmit: true, skipLibCheck: true, types: [], lib: ['lib.es2022.d.ts'] };
const base = ts.createCompilerHost(options);
const cache = new Map();
const host = { ...base,
  getCurrentDirectory: () => root,
  fileExists: (f) => files.has(f) || base.fileExists(f),
  readFile: (f) => files.get(f) ?? base.readFile(f),
  directoryExists: (d) => d === vdir || (base.directoryExists?.(d) ?? true),
  getSourceFile(f, lang) { const v = files.get(f); if (v !== undefined) return ts.createSourceFile(f, v, lang, true); let s = cache.get(f); if (!s) { s = base.getSourceFile(f, lang); cache.set(f, s);} return s; },
};
let old; for (let i = 0; i < 4; i++) {
  const t = performance.now();
  const program = ts.createProgram([...files.keys()], options, host, old); old = program; const t1 = performance.now(); console.log("create", (t1-t).toFixed(0), program.getSourceFiles().length);
  const diags = [...program.getGlobalDiagnostics(), ...program.getOptionsDiagnostics(), ...[...files.keys()].flatMap(f => { const sf = program.getSourceFile(f); return [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)]; })];
  console.log(i, (performance.now()-t).toFixed(0), 'ms', diags.map(d => ts.flattenDiagnosticMessageText(d.messageText, '\n')));
}
