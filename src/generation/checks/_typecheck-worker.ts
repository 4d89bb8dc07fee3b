// The worker thread of the type-checker (started by ./typecheck.ts): the TypeScript compiler API over virtual files,
// keeping the parsed library and zod declarations between checks.
import type * as TS from 'typescript';
import { parentPort, workerData } from 'node:worker_threads';

type CheckMessage = { id: number; files: Record<string, string>; report: string[] };

const data = workerData as { typescript: string; root: string };
// Loaded by URL from the framework's own node_modules, as the parent resolved it.
const ts = ((await import(data.typescript)) as { default: typeof TS }).default;
const dir = `${data.root.replace(/\\/g, '/')}/.agora-typecheck`;
const options: TS.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ['lib.es2022.d.ts'],
  types: [],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  isolatedModules: true,
  allowImportingTsExtensions: true,
  noFallthroughCasesInSwitch: true,
};
const base = ts.createCompilerHost(options, true);
// Parsed library and zod declarations are kept: only the virtual files change from one check to the next.
const cache = new Map<string, TS.SourceFile>();
let virtual = new Map<string, string>();
const host: TS.CompilerHost = {
  ...base,
  getCurrentDirectory: () => data.root,
  fileExists: (name) => virtual.has(name) || base.fileExists(name),
  readFile: (name) => virtual.get(name) ?? base.readFile(name),
  directoryExists: (name) => name === dir || (base.directoryExists ? base.directoryExists(name) : true),
  writeFile: () => {},
  getSourceFile(name, language, onError, shouldCreate) {
    const text = virtual.get(name);
    if (text !== undefined) return ts.createSourceFile(name, text, language, true);
    let file = cache.get(name);
    if (!file) {
      file = base.getSourceFile(name, language, onError, shouldCreate);
      if (file) cache.set(name, file);
    }
    return file;
  },
};

function format(diagnostic: TS.Diagnostic): string {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
  if (!diagnostic.file || diagnostic.start === undefined) return `error TS${diagnostic.code}: ${message}`;
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  const name = diagnostic.file.fileName.slice(diagnostic.file.fileName.lastIndexOf('/') + 1);
  return `${name}(${line + 1},${character + 1}): error TS${diagnostic.code}: ${message}`;
}

const port = parentPort;
port?.on('message', ({ id, files, report }: CheckMessage) => {
  const started = performance.now();
  try {
    virtual = new Map(Object.entries(files).map(([name, text]) => [`${dir}/${name}`, text]));
    const program = ts.createProgram([...virtual.keys()], options, host);
    const diagnostics = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
    for (const name of report) {
      const file = program.getSourceFile(`${dir}/${name}`);
      if (file) diagnostics.push(...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file));
    }
    port.postMessage({ id, errors: diagnostics.slice(0, 20).map(format), ms: performance.now() - started });
  } catch (error) {
    port.postMessage({
      id,
      errors: [`the type-check crashed: ${(error as Error | null)?.message}`],
      ms: performance.now() - started,
    });
  }
});
