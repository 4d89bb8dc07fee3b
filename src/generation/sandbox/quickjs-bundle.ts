// How a generated module becomes one script for the QuickJS sandbox (./quickjs.ts): esbuild bundles it with zod
// into an IIFE whose exports the sandbox reads; `agora-agents` is a shim; every other import is refused.
//
// The import policy here keeps the build honest (a refused import is a clear build error the LLM can fix); it is
// not the security boundary. The boundary is the QuickJS context, which has no module loader, no `process`, no
// host objects: a computed `import()` or an `eval`'d one only reaches "could not load module".
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeLoadError } from '../../_files.js';
import { MISSING_HANDLE } from '../../routine/handle.js';

/** The build error every import but zod and agora-agents gets. */
export const IMPORT_POLICY_ERROR = 'generated routines may only import zod and agora-agents';

/** The name esbuild gives the module's exports; the sandbox wraps the bundle so it never becomes a global. */
export const MODULE_GLOBAL = '__agora_module';

const GENERATED_SOURCE = '__agora_generated_module__.ts';

// The whole of `agora-agents` a generated module gets at run time: the same checks as src/routine/define.ts, and
// the routine's input and output schemas as zod compiles them (z.compile: a clone whose safeParse runs a parser
// generated for that schema, and falls back to zod's own parse, the source of every error, when it fails). Zod
// interpreted by QuickJS spent ~4 µs a schema on a small object; its compiled parser about a third of that. The
// code is generated inside the guest with the guest's own Function, which reaches only QuickJS (see ./quickjs.ts);
// a schema zod cannot compile comes back unchanged. The routine's own references to its schemas stay the originals.
const AGORA_SHIM = `import { compile } from 'zod';
export function defineRoutine(definition) {
  if (!definition || typeof definition.handle !== 'function') throw new Error(${JSON.stringify(MISSING_HANDLE)});
  const routine = { ...definition, kind: 'routine' };
  for (const key of ['input', 'output']) if (routine[key] && routine[key]._zod) routine[key] = compile(routine[key]);
  return Object.freeze(routine);
}
`;

// Three levels up from src/generation/sandbox/ and dist/generation/sandbox/ alike: the folder whose node_modules
// holds zod.
const frameworkRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * Bundles a generated module (TypeScript) into one classic script for QuickJS: zod included, `agora-agents` a
 * shim providing defineRoutine, the exports in `var __agora_module` (see wrapBundle). Throws "generated routines may
 * only import zod and agora-agents" for any other static import, relative ones included.
 */
export async function bundleForQuickJS(code: string): Promise<string> {
  const esbuild = await import('esbuild');
  const entry = join(frameworkRoot, GENERATED_SOURCE);
  try {
    const result = await esbuild.build({
      stdin: { contents: code, loader: 'ts', resolveDir: frameworkRoot, sourcefile: GENERATED_SOURCE },
      bundle: true,
      write: false,
      format: 'iife',
      globalName: MODULE_GLOBAL,
      platform: 'neutral',
      mainFields: ['module', 'main'],
      // QuickJS 2025-09 implements ES2023; nothing needs lowering, and lowering would only slow the interpreter.
      target: 'es2022',
      legalComments: 'none',
      logLevel: 'silent',
      plugins: [
        {
          name: 'agora-generated-imports',
          setup(build) {
            build.onResolve({ filter: /.*/ }, (args) => {
              // zod's own files import each other: only the generated module is held to the policy.
              if (args.kind === 'entry-point' || args.importer !== entry) return undefined;
              if (args.path === 'agora-agents') return { path: 'agora-agents', namespace: 'agora-shim' };
              if (args.path === 'zod' || args.path.startsWith('zod/')) return undefined;
              return { errors: [{ text: `${IMPORT_POLICY_ERROR}, not "${args.path}"` }] };
            });
            build.onLoad({ filter: /.*/, namespace: 'agora-shim' }, () => ({
              contents: AGORA_SHIM,
              loader: 'js',
              resolveDir: frameworkRoot,
            }));
          },
        },
      ],
    });
    const output = result.outputFiles[0];
    if (!output) throw new Error('esbuild produced nothing');
    return output.text;
  } catch (error) {
    throw new Error(describeLoadError(error), { cause: error });
  }
}
