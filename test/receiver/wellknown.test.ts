import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createHandler } from '../../src/agora/handler.js';
import { memoryLogger } from '../../src/log.js';
import { InMemoryMemory } from '../../src/memory/file.js';
import { hashText } from '../../src/protocol/document.js';
import { Receiver } from '../../src/receiver.js';

const doc = (name: string) =>
  `---\nname: ${name}\ndescription: ${name} things\nmultiround: false\n---\nSend JSON about ${name}.\n`;
const ROUTINE = 'export default { handle: () => ({ ok: true }) };';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function agent(count: number) {
  const dir = await mkdtemp(join(tmpdir(), 'agora-wellknown-'));
  await mkdir(join(dir, 'protocols'));
  await mkdir(join(dir, 'routines'));
  for (let index = 0; index < count; index += 1) {
    await writeFile(join(dir, 'protocols', `p${index}.md`), doc(`p${index}`));
    await writeFile(join(dir, 'routines', `p${index}.mjs`), ROUTINE);
  }
  const receiver = await Receiver.start({
    dir,
    llm: null,
    watch: false,
    memory: new InMemoryMemory(),
    logger: memoryLogger(),
  });
  cleanups.push(async () => {
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
  });
  const handle = createHandler(receiver, { publicUrl: 'https://agent.example' });
  const get = (headers: Record<string, string> = {}) =>
    handle({ method: 'GET', path: '/wellknown', headers, body: undefined });
  return { dir, receiver, get };
}

describe('/wellknown built once per change', () => {
  it('answers with an ETag, 304 for a matching If-None-Match, and the same object until something changes', async () => {
    const { receiver, get } = await agent(3);
    const first = await get();
    expect(first.status).toBe(200);
    const etag = first.headers.etag!;
    expect(etag).toMatch(/^W\/"[A-Za-z0-9_-]+"$/);
    expect(first.headers.vary).toBe('Accept-Encoding');
    const listing = JSON.parse(String(first.body)) as Record<string, string[]>;
    expect(Object.keys(listing).sort()).toEqual(['p0', 'p1', 'p2'].map((name) => hashText(doc(name))).sort());
    expect(listing[hashText(doc('p0'))]).toEqual([`https://agent.example/protocols/${hashText(doc('p0'))}`]);
    const again = await get({ 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.etag).toBe(etag);
    expect((await get({ 'if-none-match': `"other", ${etag.slice(2)}` })).status).toBe(304);
    expect((await get({ 'if-none-match': '"other"' })).status).toBe(200);
    expect(await receiver.wellknown()).toBe(await receiver.wellknown());
  });

  it('rebuilds the body when a protocol is added, with a new ETag', async () => {
    const { dir, receiver, get } = await agent(2);
    const before = await get();
    await writeFile(join(dir, 'protocols', 'added.md'), doc('added'));
    // Written a while ago: settled, so the scan takes it at once.
    await utimes(join(dir, 'protocols', 'added.md'), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    await writeFile(join(dir, 'routines', 'added.mjs'), ROUTINE);
    await receiver.registry.scan();
    await receiver.reloadRoutines();
    const after = await get({ 'if-none-match': before.headers.etag! });
    expect(after.status).toBe(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect(Object.keys(JSON.parse(String(after.body)) as object)).toContain(hashText(doc('added')));
  });

  it('compresses a large listing with Brotli or gzip when accepted, and not when refused', async () => {
    const { get } = await agent(40);
    const plain = await get();
    const text = String(plain.body);
    const br = await get({ 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(brotliDecompressSync(br.body as Buffer).toString()).toBe(text);
    expect(Number(br.headers['content-length'])).toBe((br.body as Buffer).length);
    expect((br.body as Buffer).length).toBeLessThan(text.length / 2);
    const gzip = await get({ 'accept-encoding': 'gzip;q=1, br;q=0' });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzip.body as Buffer).toString()).toBe(text);
    const identity = await get({ 'accept-encoding': 'identity' });
    expect(identity.headers['content-encoding']).toBeUndefined();
    expect(String(identity.body)).toBe(text);
    // The same representation, so the same (weak) ETag whatever the encoding.
    expect(new Set([plain, br, gzip, identity].map((response) => response.headers.etag)).size).toBe(1);
  });

  it('answers HEAD with the headers only', async () => {
    const { receiver } = await agent(1);
    const response = await createHandler(receiver)({
      method: 'HEAD',
      path: '/wellknown',
      headers: { host: 'localhost:1' },
      body: undefined,
    });
    expect(response.status).toBe(200);
    expect(response.body).toBe('');
    expect(Number(response.headers['content-length'])).toBeGreaterThan(2);
  });
});
