import { afterEach, describe, expect, it } from 'vitest';
import { Hub } from '../../src/hub/hub.js';
import { hashText } from '../../src/protocol/document.js';
import { document, startFakeAgent, startLoopbackAgent } from './_agents.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function hubWithClock(options: ConstructorParameters<typeof Hub>[0] = {}) {
  const clock = { now: 1_000_000 };
  const hub = new Hub({
    allowPrivateAgents: true,
    checkIntervalMs: 60_000,
    maxMissedChecks: 2,
    now: () => clock.now,
    ...options,
  });
  cleanups.push(() => hub.close());
  return { hub, clock };
}

describe('hub directory', () => {
  it('registers an agent by URL from its /wellknown and documents, and finds it by words and by protocol', async () => {
    const agent = await startLoopbackAgent(
      { 'Weather forecast': 'Gives the weather forecast for a city.', 'Air quality': 'Pollution levels of a city.' },
      () => 'ok',
    );
    cleanups.push(agent.close);
    const { hub } = hubWithClock();

    const record = await hub.register({ url: `${agent.url}/`, name: 'meteo' });
    expect(record).toMatchObject({ url: agent.url, name: 'meteo', kind: 'agora', status: 'up', missedChecks: 0 });
    expect(record.protocols.map((protocol) => protocol.name).sort()).toEqual(['Air quality', 'Weather forecast']);

    const byWords = await hub.agents({ q: 'forecasts for Paris' });
    expect(byWords.map((hit) => hit.id)).toEqual([record.id]);
    expect(byWords[0]!.matches).toContainEqual({ word: 'forecast', field: 'protocol "Weather forecast"' });
    const weather = record.protocols.find((protocol) => protocol.name === 'Weather forecast')!;
    expect(
      (await hub.agents({ protocol: Buffer.from(weather.hash, 'hex').toString('base64') })).map((hit) => hit.id),
    ).toEqual([record.id]);
    expect(await hub.agents({ q: 'shipping' })).toEqual([]);
    // Its documents went to the protocol database, listed with who serves them.
    expect(await hub.catalogue.text(weather.hash)).toBe(
      document('Weather forecast', 'Gives the weather forecast for a city.'),
    );
    expect((await hub.protocols('weather'))[0]).toMatchObject({
      hash: weather.hash,
      servedBy: [{ id: record.id, name: 'meteo', url: agent.url }],
    });

    // Registering the same URL again updates the record rather than adding one.
    await hub.register({ url: agent.url, name: 'meteo-2' });
    expect((await hub.agents()).map((hit) => hit.name)).toEqual(['meteo-2']);
  });

  it('refuses a loopback agent unless private agents are allowed, and an agent that answers garbage', async () => {
    const agent = await startLoopbackAgent({ Echo: 'Echoes.' }, () => 'ok');
    cleanups.push(agent.close);
    const strict = new Hub();
    cleanups.push(() => strict.close());
    await expect(strict.register({ url: agent.url })).rejects.toThrow(
      /loopback or private address.*--allow-private-agents/,
    );
    await expect(strict.register({ url: 'ftp://example.com' })).rejects.toThrow('Agent URL must be http or https');

    const { hub } = hubWithClock();
    const fake = await startFakeAgent(document('Echo', 'Echoes.'));
    cleanups.push(fake.close);
    fake.state.healthy = false;
    await expect(hub.register({ url: fake.url })).rejects.toThrow(
      /answers none of GET \/wellknown \(Agora\), GET \/roar\/card \(ROAR\), GET \/.well-known\/agent-card.json \(A2A\), GET \/ \(OAP\), GET \/roar\/health \(ROAR\)/,
    );
    expect(await hub.agents({ includeDown: true })).toEqual([]);
  });

  it('skips a document served under the wrong hash, never trusting it', async () => {
    const { hub } = hubWithClock();
    const fake = await startFakeAgent(document('Echo', 'Echoes.'));
    cleanups.push(fake.close);
    fake.state.served = document('Echo', 'Something else entirely.');
    const record = await hub.register({ url: fake.url });
    expect(record.protocols).toEqual([]);
    expect(record.lastError).toContain(`the document served hashes to ${hashText(fake.state.served)} (refused)`);
    expect(await hub.catalogue.text(fake.hash)).toBeUndefined();
  });

  it('re-reads agents when due, marks one down after missed checks and up again when it answers', async () => {
    const { hub, clock } = hubWithClock();
    const fake = await startFakeAgent(document('Echo', 'Echoes a message.'));
    cleanups.push(fake.close);
    const record = await hub.register({ url: fake.url, name: 'echo' });

    expect(await hub.directory.checkDue('me')).toBe(0);
    fake.state.healthy = false;
    clock.now += 60_000;
    expect(await hub.directory.checkDue('me')).toBe(1);
    expect(await hub.directory.resolve(record.id)).toMatchObject({ status: 'up', missedChecks: 1 });
    clock.now += 60_000;
    await hub.directory.checkDue('me');
    expect(await hub.directory.resolve('echo')).toMatchObject({
      status: 'down',
      missedChecks: 2,
      lastError: expect.stringContaining('HTTP 500'),
    });
    // Down agents are skipped by search and routing.
    expect(await hub.agents({ q: 'echo' })).toEqual([]);
    await expect(hub.route('echo a message')).rejects.toThrow('No agent matches the goal');

    fake.state.healthy = true;
    clock.now += 60_000;
    await hub.directory.checkDue('me');
    expect(await hub.directory.resolve(fake.url)).toMatchObject({ status: 'up', missedChecks: 0, lastSeen: clock.now });
    expect((await hub.agents({ q: 'echo' })).length).toBe(1);
  });

  it('removes an agent, and refuses agents past the directory cap', async () => {
    const { hub } = hubWithClock({ maxAgents: 1 });
    const one = await startFakeAgent(document('One', 'First.'));
    const two = await startFakeAgent(document('Two', 'Second.'));
    cleanups.push(one.close, two.close);
    const record = await hub.register({ url: one.url });
    await expect(hub.register({ url: two.url })).rejects.toThrow('The directory is full (1 agents)');
    expect(await hub.directory.remove(record.id)).toBe(true);
    expect(await hub.directory.remove(record.id)).toBe(false);
    await hub.register({ url: two.url });
    expect((await hub.agents()).map((hit) => hit.url)).toEqual([two.url]);
  });
});

describe('hub protocol database', () => {
  it('publishes with a hash check in hex or base64, searches, serves the exact text, and caps size and count', async () => {
    const { hub } = hubWithClock({ maxDocuments: 2, maxDocumentBytes: 400 });
    const text = document('Currency conversion', 'Converts an amount between currencies.');
    const hash = hashText(text);
    await expect(hub.catalogue.publish(hash, `${text} `)).rejects.toThrow(
      `Hash mismatch: the text hashes to ${hashText(`${text} `)}, not ${hash}`,
    );
    await expect(hub.catalogue.publish('nope', text)).rejects.toThrow('hash is not a SHA1');
    await expect(hub.catalogue.publish(hashText('x'.repeat(500)), 'x'.repeat(500))).rejects.toThrow(
      'over the 400-byte limit',
    );
    await expect(hub.catalogue.publish(hashText('not a document\n'), 'not a document\n')).rejects.toMatchObject({
      code: 'INVALID_DOCUMENT',
    });

    expect(await hub.catalogue.publish(Buffer.from(hash, 'hex').toString('base64'), text)).toMatchObject({
      hash,
      name: 'Currency conversion',
    });
    expect(await hub.catalogue.text(hash)).toBe(text);
    expect((await hub.protocols('convert currencies')).map((entry) => entry.hash)).toEqual([hash]);
    expect(await hub.protocols('weather')).toEqual([]);

    await hub.catalogue.publish(hashText(document('B', 'b.')), document('B', 'b.'));
    await expect(hub.catalogue.publish(hashText(document('C', 'c.')), document('C', 'c.'))).rejects.toThrow(
      'The protocol database is full (2 documents)',
    );
    // Publishing a document already held is a no-op, even when full.
    await expect(hub.catalogue.publish(hash, text)).resolves.toMatchObject({ hash });
  });
});
