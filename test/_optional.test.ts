// src/_optional.ts: a missing optional peer is named with the command that installs it, and an agent with an LLM but
// without the routine writer's packages says so at start and serves all the same.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { importOptional, installHint, isMissingPackage, missingPackages } from '../src/_optional.js';
import { isAgoraError } from '../src/errors.js';
import { makeAgentFolder } from './helpers/agent-folder.js';
import { watchedLogger } from './helpers/watched-logger.js';

const ABSENT = 'agora-test-absent-package';

afterEach(() => {
  vi.doUnmock('../src/_optional.js');
  vi.resetModules();
});

describe('optional peers', () => {
  it('names the missing package and the command that installs it', async () => {
    const failure = await importOptional(ABSENT, 'Calling absent agents', () => import(/* @vite-ignore */ ABSENT)).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isAgoraError(failure) && failure.message).toBe(
      `Calling absent agents needs ${ABSENT}, not installed with agora-agents: npm install ${ABSENT}`,
    );
  });

  it("passes on other failures, and a missing file of a package that is there is not the package's absence", async () => {
    const broken = new Error('boom');
    await expect(importOptional('zod', 'Zod', () => Promise.reject(broken))).rejects.toBe(broken);
    const inner = Object.assign(new Error("Cannot find module '/x/node_modules/zod/gone.js'"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    expect(isMissingPackage(inner, 'zod')).toBe(false);
  });

  it('tells installed packages from absent ones', () => {
    expect(missingPackages(['zod', 'typescript', ABSENT])).toEqual([ABSENT]);
    expect(installHint('the routine writer', ['quickjs-emscripten', 'typescript'])).toBe(
      'the routine writer needs quickjs-emscripten and typescript, not installed with agora-agents: npm install quickjs-emscripten typescript',
    );
  });

  it('an agent with an LLM but without QuickJS warns at start that it writes no routines, and serves', async () => {
    vi.doMock('../src/_optional.js', async (original) => ({
      ...(await original<typeof import('../src/_optional.js')>()),
      missingPackages: () => ['quickjs-emscripten'],
    }));
    const { startAgent } = await import('../src/agent.js');
    const { OfflineModel } = await import('../src/llm/offline.js');
    const folder = await makeAgentFolder();
    const { logger, lines } = watchedLogger();
    const agent = await startAgent({ dir: folder.dir, port: 0, llm: new OfflineModel(), watch: false, logger });
    try {
      expect(lines.filter((line) => line.startsWith('warn routines are not written'))).toEqual([
        'warn routines are not written: the routine writer needs quickjs-emscripten, not installed with agora-agents: npm install quickjs-emscripten',
      ]);
      expect((await fetch(`${agent.url}/health`)).status).toBe(200);
    } finally {
      await agent.close();
      await folder.cleanup();
    }
  }, 60_000);
});
