// The worker thread of the type-checker (started by ./typecheck.ts): the TypeScript compiler API over virtual files,
// keeping the parsed library and zod declarations between checks.
import type * as TS from 'typescript';
import { parentPort, workerData } from 'node:worker_threads';

/** Virtual files to check (those named in `report`), and with `disk` hand-written files on disk instead. */
type CheckMessage = {
  id: number;
  files: Record<string, string>;
  report: string[];
  disk?: { files: string[]; root: string };
};

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
// Hand-written files: 'agora-agents' is the virtual declaration of its contracts; Node's types when installed.
const nodeTypes = ts.resolveTypeReferenceDirective('node', `${dir}/index.ts`, { types: ['node'] }, ts.sys)
  .resolvedTypeReferenceDirective?.resolvedFileName;
const authoredOptions: TS.CompilerOptions = {
  ...options,
  lib: ['lib.es2023.d.ts'],
  types: nodeTypes ? ['node'] : [],
  typeRoots: nodeTypes ? [nodeTypes.slice(0, nodeTypes.lastIndexOf('/node/'))] : [],
  paths: { 'agora-agents': [`${dir}/agora-agents.d.ts`] },
};
// Not errors of the file's code: a module that does not resolve fails its import when the file loads (and is logged
// then); a name of 'agora-agents' beyond the contracts is left unchecked; Node's globals without @types/node.
const IGNORED = new Set([2307, 2305, 2614, 2580, 2591, 2792]);

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
    // Only installed declarations are kept: a hand-written file (and what it imports of its own) may change.
    if (!name.includes('/node_modules/')) return base.getSourceFile(name, language, onError, shouldCreate);
    let file = cache.get(name);
    if (!file) {
      file = base.getSourceFile(name, language, onError, shouldCreate);
      if (file) cache.set(name, file);
    }
    return file;
  },
};

/** `routine.ts(3,5): error TS…` for a virtual file; a file on disk as `routines/x.ts:3:5: error TS…` under `root`. */
function format(diagnostic: TS.Diagnostic, root?: string): string {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
  if (!diagnostic.file || diagnostic.start === undefined) return `error TS${diagnostic.code}: ${message}`;
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  const fileName = diagnostic.file.fileName;
  if (root !== undefined) {
    const name = fileName.startsWith(`${root}/`) ? fileName.slice(root.length + 1) : fileName;
    return `${name}:${line + 1}:${character + 1}: error TS${diagnostic.code}: ${message}`;
  }
  const name = fileName.slice(fileName.lastIndexOf('/') + 1);
  return `${name}(${line + 1},${character + 1}): error TS${diagnostic.code}: ${message}`;
}

const port = parentPort;
port?.on('message', ({ id, files, report, disk }: CheckMessage) => {
  const started = performance.now();
  try {
    virtual = new Map(Object.entries(files).map(([name, text]) => [`${dir}/${name}`, text]));
    const checked = disk ? disk.files.map((file) => file.replace(/\\/g, '/')) : report.map((name) => `${dir}/${name}`);
    const program = disk
      ? ts.createProgram(checked, authoredOptions, host)
      : ts.createProgram([...virtual.keys()], options, host);
    const diagnostics = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
    for (const name of checked) {
      const file = program.getSourceFile(name);
      if (file) diagnostics.push(...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file));
    }
    const errors = disk ? diagnostics.filter((diagnostic) => !IGNORED.has(diagnostic.code)) : diagnostics;
    const root = disk?.root.replace(/\\/g, '/');
    port.postMessage({
      id,
      errors: errors.slice(0, 20).map((diagnostic) => format(diagnostic, root)),
      ms: performance.now() - started,
    });
  } catch (error) {
    port.postMessage({
      id,
      errors: [`the type-check crashed: ${(error as Error | null)?.message}`],
      ms: performance.now() - started,
    });
  }
});
