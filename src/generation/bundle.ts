// Building a generated module: esbuild bundles it with zod and the `agora-agents` shim, and refuses every other
// import, so what runs in the sandbox (./sandbox.ts) holds nothing but the module, zod and the contract's check.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgoraError } from '../errors.js';
import { describeLoadError } from '../_files.js';
import { frameworkRoot, siblingModule } from './_worker.js';

/** The build error every import but zod and agora-agents gets. */
export const IMPORT_POLICY_ERROR = 'generated routines may only import zod and agora-agents';

const GENERATED_SOURCE = '__agora_generated_module__.ts';

/**
 * Bundles a generated module into one ESM string (zod included, `agora-agents` a shim providing defineRoutine).
 * Throws "generated routines may only import zod and agora-agents" for any other import, relative ones included.
 */
export async function bundleGeneratedModule(code: string): Promise<string> {
  // esbuild leaves a computed import() alone, and it could reach node: modules at run time: refuse it here.
  if (/\bimport\s*\(|\brequire\s*\(/.test(code)) throw new AgoraError('INVALID_OUTPUT', `${IMPORT_POLICY_ERROR}: no import() and no require()`);
  const esbuild = await import('esbuild');
  const root = frameworkRoot();
  const entry = join(root, GENERATED_SOURCE);
  try {
    const result = await esbuild.build({
      stdin: { contents: code, loader: 'ts', resolveDir: root, sourcefile: GENERATED_SOURCE },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      target: 'node20',
      legalComments: 'none',
      logLevel: 'silent',
      plugins: [
        {
          name: 'agora-generated-imports',
          setup(build) {
            build.onResolve({ filter: /.*/ }, (args) => {
              // zod's own files import each other: only the generated module is held to the policy.
              if (args.kind === 'entry-point' || args.importer !== entry) return undefined;
              // The whole of `agora-agents` a generated module gets at run time: ./_shim.ts, bundled in.
              if (args.path === 'agora-agents') return { path: fileURLToPath(siblingModule('_shim')) };
              if (args.path === 'zod' || args.path.startsWith('zod/')) return undefined;
              return { errors: [{ text: `${IMPORT_POLICY_ERROR}, not "${args.path}"` }] };
            });
          },
        },
      ],
    });
    const output = result.outputFiles[0];
    if (!output) throw new AgoraError('INVALID_OUTPUT', 'esbuild produced nothing');
    return output.text;
  } catch (error) {
    throw new AgoraError('INVALID_OUTPUT', describeLoadError(error), { cause: error });
  }
}
