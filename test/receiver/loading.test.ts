// An agent answers while its protocols/ is first read: a document found answers at once, a lookup that misses waits
// for the load (then answers, or says the protocol is unknown), /wellknown is never a partial listing, /health
// answers at once and says the folder is loading. The document the scan reaches last is held back (its read fails
// as if out of descriptors until the test lets it through), so the loading state is certain, never a matter of timing.
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startServer } from '../../src/agent.js';
import { OfflineModel } from '../../src/llm/offline.js';
import { silentLogger } from '../../src/log.js';
import { InMemoryMemory } from '../../src/memory/file.js';
import { hashText } from '../../src/protocol/document.js';
import { Receiver } from '../../src/receiver.js';

const gate = vi.hoisted(() => ({ file: '', open: false, refused: 0 }));
vi.mock('../../src/protocol/_read.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/protocol/_read.js')>();
  return {
    ...original,
    statAndReadSync: (file: string, wanted: Parameters<typeof original.statAndReadSync>[1]) => {
      if (!gate.open && basename(file) === gate.file) {
        gate.refused += 1;
        throw Object.assign(new Error(`EMFILE: too many open files, open '${file}'`), { code: 'EMFILE' });
      }
      return original.statAndReadSync(file, wanted);
    },
  };
});

const COUNT = 3000;
const doc = (name: string) =>
  `---\nname: ${name}\ndescription: The ${name} protocol.\nmultiround: false\n---\nSend {"message": string}; the reply is {"echo": string}.\n`;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function post(url: string, body: unknown): Promise<unknown> {
  return (
    await fetch(`${url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
  ).json();
}

describe('a receiver started without waiting for protocols/', () => {
  it('answers while it loads: hits at once, misses once loaded, /wellknown complete, /health says loading', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agora-loading-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await mkdir(join(dir, 'protocols'));
    const names = Array.from({ length: COUNT }, (_, index) => `d${String(index).padStart(4, '0')}`);
    for (let index = 0; index < COUNT; index += 500)
      await Promise.all(
        names.slice(index, index + 500).map((name) => writeFile(join(dir, 'protocols', `${name}.md`), doc(name))),
      );
    // The scan reads in the order of the listing: the last file it lists is the one reached last, and held back.
    const listed = readdirSync(join(dir, 'protocols'));
    const late = listed.at(-1)!.slice(0, -3);
    const early = listed[0]!.slice(0, -3);
    await mkdir(join(dir, 'routines'));
    for (const name of [late, early])
      await writeFile(
        join(dir, 'routines', `${name}.ts`),
        `export default (body: { message: string }) => ({ echo: '${name}: ' + body.message });`,
      );
    Object.assign(gate, { file: `${late}.md`, open: false, refused: 0 });

    // The late document was also learned from a peer once: until the folder has it, that must not answer for it
    // (as a learned document it has no routine file, and the LLM would answer instead of routines/<late>.ts).
    const memory = new InMemoryMemory();
    await memory.set(`documents/${hashText(doc(late))}`, {
      text: doc(late),
      name: late,
      learnedAt: new Date().toISOString(),
      usedAt: new Date().toISOString(),
    });
    const receiver = await Receiver.start({
      dir,
      llm: new OfflineModel(),
      memory,
      logger: silentLogger,
      watch: false,
      waitForProtocols: false,
    });
    cleanups.push(() => receiver.close());
    const server = await startServer(receiver, {
      port: 0,
      host: '127.0.0.1',
      faces: false,
      dashboard: false,
      logger: silentLogger,
    });
    cleanups.push(() => server.close());
    expect(receiver.loading()).toBe(true);

    // Asked while loading: a query under the late document, its text, the listing, and a protocol nobody has.
    let lateSettled = false;
    const lateReply = post(server.url, { protocolHash: hashText(doc(late)), body: { message: 'hi' } }).finally(
      () => (lateSettled = true),
    );
    const lateText = fetch(`${server.url}/protocols/${hashText(doc(late))}`).then((response) => response.text());
    const wellknown = fetch(`${server.url}/wellknown`).then(
      (response) => response.json() as Promise<Record<string, string[]>>,
    );
    const unknown = post(server.url, { protocolHash: hashText(doc('nobody')), body: {} }).then((reply) => ({
      reply,
      loadingThen: receiver.loading(),
    }));

    // A document already read answers at once, and /health at once, while the folder is still loading.
    expect(await post(server.url, { protocolHash: hashText(doc(early)), body: { message: 'hi' } })).toEqual({
      status: 'success',
      body: { echo: `${early}: hi` },
    });
    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', protocols: 'loading' });
    expect(receiver.loading()).toBe(true);
    expect(gate.refused).toBeGreaterThan(0);
    expect(lateSettled).toBe(false);

    gate.open = true;
    expect(await lateReply).toEqual({ status: 'success', body: { echo: `${late}: hi` } });
    expect(await lateText).toBe(doc(late));
    const listing = await wellknown;
    expect(Object.keys(listing)).toHaveLength(COUNT);
    expect(listing[hashText(doc(late))]).toEqual([`${server.url}/protocols/${hashText(doc(late))}`]);
    // The unknown protocol waited for the load, then got the spec's failure.
    expect(await unknown).toEqual({ reply: { status: 'failure', error: 'Unsupported protocol' }, loadingThen: false });
    expect(receiver.loading()).toBe(false);
    expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ status: 'ok' });
  }, 30_000);

  it('Receiver.start waits for protocols/ by default', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agora-loading-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await mkdir(join(dir, 'protocols'));
    for (const name of ['a', 'b', 'c']) await writeFile(join(dir, 'protocols', `${name}.md`), doc(name));
    Object.assign(gate, { file: 'c.md', open: false, refused: 0 });
    let started = false;
    const starting = Receiver.start({ dir, llm: null, logger: silentLogger, watch: false }).then((receiver) => {
      started = true;
      cleanups.push(() => receiver.close());
      return receiver;
    });
    await vi.waitFor(() => expect(gate.refused).toBeGreaterThan(1), { timeout: 10_000, interval: 20 });
    expect(started).toBe(false);
    gate.open = true;
    const receiver = await starting;
    expect(receiver.loading()).toBe(false);
    expect(receiver.registry.local().map(({ name }) => name)).toEqual(['a', 'b', 'c']);
  });
});
