// The optional peer dependencies: parts a plain receiver does not need (an LLM provider's SDK, Redis, the A2A client,
// the routine writer's sandbox and type checker) are not installed with agora-agents; each is imported where it is
// first used, and a missing one is named with the command that installs it.
import { createRequire } from 'node:module';
import { AgoraError, type AgoraErrorCode } from './errors.js';

const require = createRequire(import.meta.url);

/** Whether `error` says that the package `name` itself (not one of its own files) could not be found. */
export function isMissingPackage(error: unknown, name: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  const message = error instanceof Error ? error.message : String(error);
  return message.includes(`'${name}'`) || message.includes(`'${name}/`);
}

/** The packages among `names` that cannot be resolved from the framework. */
export function missingPackages(names: readonly string[]): string[] {
  return names.filter((name) => {
    try {
      require.resolve(`${name}/package.json`);
      return false;
    } catch (error) {
      // A package whose exports hide package.json is there all the same.
      return (error as { code?: unknown }).code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED';
    }
  });
}

/** One line naming what needs `names` and the command that installs them. */
export function installHint(what: string, names: readonly string[]): string {
  return `${what} needs ${names.join(' and ')}, not installed with agora-agents: npm install ${names.join(' ')}`;
}

/**
 * Runs `load` (an `import()` of the optional package `name`), turning its absence into AgoraError(`code`) that names
 * the package to install.
 * @example const sdk = await importOptional('openai', 'the OpenAI provider', () => import('openai'));
 */
export async function importOptional<T>(
  name: string,
  what: string,
  load: () => Promise<T>,
  code: AgoraErrorCode = 'INTERNAL',
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissingPackage(error, name)) throw new AgoraError(code, installHint(what, [name]));
    throw error;
  }
}

/** What the routine writer needs beyond agora-agents: QuickJS (its sandbox) and TypeScript (its type checker). */
export const ROUTINE_WRITER_PACKAGES = ['quickjs-emscripten', 'typescript'] as const;
