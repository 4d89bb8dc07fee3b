import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { AgoraError } from '../../src/errors.js';

/** The distance-conversion PD of the sender and negotiation tests, in the normalised layout a negotiation writes. */
export const DISTANCE = [
  '---',
  'name: Distance conversion',
  'description: Convert a distance in miles to kilometres.',
  'multiround: false',
  '---',
  '',
  'The sender sends JSON {"miles": number}.',
  'The receiver replies JSON {"km": number}, rounded to 3 decimals.',
  '',
].join('\n');

/** Miles to km, rounded to 3 decimals as {@link DISTANCE} prescribes. */
export const km = (miles: number) => Math.round(miles * 1609.344) / 1000;

/** Steps run last-first by `run` (in `afterAll`), each failure ignored; `tempDir` adds the removal of its folder. */
export function cleanupStack(): { push(...steps: (() => Promise<void>)[]): void; tempDir(prefix: string): Promise<string>; run(): Promise<void> } {
  const steps: (() => Promise<void>)[] = [];
  return {
    push: (...more) => void steps.push(...more),
    async tempDir(prefix) {
      const dir = await mkdtemp(join(tmpdir(), prefix));
      steps.push(() => rm(dir, { recursive: true, force: true }));
      return dir;
    },
    async run() {
      for (const step of steps.reverse()) await step().catch(() => undefined);
    },
  };
}

/** One request a sender made, its JSON body parsed. */
export type Call = { method: string; url: string; json?: any };

/** A fetch that records each request, then makes it. */
export function recordingFetch(): { calls: Call[]; fetch: typeof fetch } {
  const calls: Call[] = [];
  return {
    calls,
    fetch: async (input, init) => {
      calls.push({ method: init?.method ?? 'GET', url: String(input), ...(typeof init?.body === 'string' ? { json: JSON.parse(init.body) } : {}) });
      return fetch(input, init);
    },
  };
}

/** The AgoraError a promise rejects with (fails the test when it resolves or throws something else). */
export async function failureOf(promise: Promise<unknown>): Promise<AgoraError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AgoraError);
  return error as AgoraError;
}
