// A store over TLS with an ACL user (a redis-server and its certificates made here): verified with the CA named by
// `ca`, refused without it or with a wrong password, as managed Redis services require.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStores } from '../src/agent/stores.js';
import { missingRedis, startTlsRedis } from './helpers/redis-topology.js';
import { sampleRecord } from './conversation/store-contract.js';

const missing = missingRedis({ tls: true });
const describeTls = missing ? describe.skip : describe;
const title = missing ? `Redis over TLS (skipped: ${missing})` : 'Redis over TLS with an ACL user';

describeTls(title, () => {
  let server: Awaited<ReturnType<typeof startTlsRedis>>;
  beforeAll(async () => {
    server = await startTlsRedis();
  }, 60_000);
  afterAll(() => server?.stop());
  const prefix = `agora-test:${randomUUID()}:`;
  const query = (extra = '') => `?prefix=${encodeURIComponent(prefix)}${extra}`;

  it('keeps conversations and memory over rediss:// as the ACL user, verified with the CA file', async () => {
    const url = `${server.url}${query(`&ca=${encodeURIComponent(server.caFile)}`)}`;
    const stores = await openStores(url, { role: 'agent', dir: '/nonexistent' });
    const record = sampleRecord(Date.now());
    await stores.conversations!.create(record);
    expect(await stores.conversations!.get(record.id)).toEqual(record);
    await stores.memory.set('documents/a', { ok: true });
    expect(await stores.memory.keys('documents/')).toEqual(['documents/a']);
    await stores.close();
    const hub = await openStores(url, { role: 'hub' });
    expect(await hub.hub!.listAgents()).toEqual([]);
    await hub.hub!.close();
    await hub.close();
  });

  it('refuses a server its CA does not vouch for, and a wrong password, with one clear STORE_UNAVAILABLE', async () => {
    await expect(openStores(`${server.url}${query()}`, { role: 'agent', dir: '/nonexistent' })).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringMatching(/certificate/),
    });
    const wrong = server.url.replace(/:[^:@]+@/, ':wrong@');
    const attempt = openStores(`${wrong}${query(`&ca=${encodeURIComponent(server.caFile)}`)}`, { role: 'hub' });
    await expect(attempt).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringMatching(/WRONGPASS/),
    });
  });
});
