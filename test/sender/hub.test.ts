// src/sender/hub.ts and hub-candidates.ts: a typed task asks the hub for a fitting protocol before negotiating,
// and publishes what it negotiates, so the next pair reuses it; a hub that is down, slow or lying is skipped.
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startAgent } from '../../src/agent.js';
import { startHub, type RunningHub } from '../../src/hub/server.js';
import { AnthropicModel } from '../../src/llm/anthropic/model.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { hashText } from '../../src/protocol/document.js';
import { HubProtocols } from '../../src/sender/hub.js';
import { Sender, type SenderOptions } from '../../src/sender/sender.js';
import { FakeAnthropic, type FakeReply, type FakeRequest } from '../../src/testing/fake-anthropic.js';
import { endlessFetch } from '../helpers/endless-fetch.js';
import { cleanupStack, DISTANCE, failureOf, km, senderFixture } from '../helpers/sender.js';

const Convert = {
  name: 'convert_miles',
  description: 'Convert a distance in miles to kilometres.',
  input: z.object({ miles: z.number() }),
  output: z.object({ km: z.number() }),
};

const cleanup = cleanupStack();
const { rawServer, cleanup: fixtureCleanup } = senderFixture();
afterAll(async () => {
  await cleanup.run();
  await fixtureCleanup.run();
});

// The service's LLM: accepts the first proposal, judges PDs suitable, answers under them and in natural language.
function serviceBrain(request: FakeRequest): FakeReply {
  const system = request.system;
  if (system.includes('negotiates a protocol document (PD) with you')) return 'I accept this protocol.';
  if (system.includes('Decide whether you can honour it')) return 'I can convert units.\nYES';
  if (system.includes('queries you under this protocol document'))
    return JSON.stringify({ km: km(JSON.parse(request.lastUserText).miles) });
  if (system.includes('in natural language')) return `${km(Number(/\d+/.exec(request.lastUserText)?.[0]))} km.`;
  return { status: 500 };
}

// The user's LLM: proposes DISTANCE at once, judges any distance PD a fit, writes bodies and reads replies.
function userBrain(request: FakeRequest): FakeReply {
  const system = request.system;
  const input = /Input \(JSON\): (.*)/.exec(request.lastUserText)?.[1];
  if (system.includes('You negotiate a protocol document'))
    return request.body.messages.length === 1
      ? `Proposal:\n${DISTANCE}`
      : `<FINALPROTOCOL>\n${DISTANCE}</FINALPROTOCOL>`;
  if (system.includes('You decide whether a protocol document'))
    return request.lastUserText.includes('miles') ? 'It converts miles.\nYES' : 'No.\nNO';
  if (system.includes('one message in natural language')) return `How many km are ${JSON.parse(input!).miles} miles?`;
  if (system.includes('Write the body of the query')) return JSON.stringify({ miles: JSON.parse(input!).miles });
  if (system.includes('turn its reply into the JSON value'))
    return JSON.stringify({ km: Number(/([\d.]+)/.exec(request.lastUserText.split('replied:\n')[1] ?? '')?.[1]) });
  return { status: 500 };
}

const kinds = (fake: FakeAnthropic) =>
  fake.requests.map((request) =>
    request.system.includes('You negotiate') ? 'negotiate' : request.system.includes('You decide') ? 'judge' : 'other',
  );

/** A service agent and a user sender with the hub option; the warnings the sender logged. */
async function pair(hub: SenderOptions['hub'], extra: SenderOptions = {}) {
  const serviceFake = await FakeAnthropic.start({ fallback: serviceBrain });
  const userFake = await FakeAnthropic.start({ fallback: userBrain });
  cleanup.push(
    () => serviceFake.close(),
    () => userFake.close(),
  );
  const service = await startAgent({
    dir: await cleanup.tempDir('agora-service-'),
    port: 0,
    host: '127.0.0.1',
    llm: new AnthropicModel({ baseURL: serviceFake.url, apiKey: 'test', maxRetries: 0 }),
    logger: silentLogger,
    watch: false,
  });
  cleanup.push(() => service.close());
  const warnings: string[] = [];
  const logger: Logger = { ...silentLogger, warn: (message) => void warnings.push(message) };
  const sender = new Sender({
    llm: new AnthropicModel({ baseURL: userFake.url, apiKey: 'test', maxRetries: 0 }),
    dir: await cleanup.tempDir('agora-user-'),
    logger,
    thresholds: { lookForProtocolFrom: 1, negotiateFrom: 1 },
    hub,
    ...extra,
  });
  return { service, serviceFake, userFake, sender, warnings, convert: sender.task(Convert) };
}

describe('a sender with a hub', () => {
  let hub: RunningHub;

  it('publishes a negotiated protocol, and the next pair reuses it with no negotiation', async () => {
    hub = await startHub({ port: 0, tickMs: 0, logger: silentLogger });
    cleanup.push(() => hub.close());

    const first = await pair(hub.url);
    expect(await first.convert({ miles: 5 }, { target: first.service.url })).toEqual({ km: 8.047 });
    expect(kinds(first.userFake)).toContain('negotiate');
    const hash = hashText(DISTANCE);
    expect((await first.sender.taskState(Convert.name, first.service.url)).negotiation).toMatchObject({
      outcome: 'agreed',
      hash,
    });
    expect(await hub.hub.catalogue.text(hash)).toBe(DISTANCE);

    // Another user and another service, neither of which knows the protocol: found at the hub, judged, used.
    const second = await pair(new HubProtocols({ url: hub.url }));
    expect(await second.convert({ miles: 10 }, { target: second.service.url })).toEqual({ km: 16.093 });
    expect(kinds(second.userFake)).not.toContain('negotiate');
    expect(kinds(second.userFake)).toContain('judge');
    expect(kinds(second.serviceFake).filter((kind) => kind === 'negotiate')).toEqual([]);
    const state = await second.sender.taskState(Convert.name, second.service.url);
    expect(state.protocolHash).toBe(hash);
    expect(state.negotiation).toBeUndefined();
    expect(second.warnings).toEqual([]);
  });

  it('negotiates as before, with a warning, when the hub is down', async () => {
    const closed = await rawServer(() => {});
    const url = closed.url;
    await new Promise<void>((resolve) => {
      closed.server.close(() => resolve());
      closed.server.closeAllConnections();
    });
    const { convert, service, userFake, warnings } = await pair(url);
    expect(await convert({ miles: 1 }, { target: service.url })).toEqual({ km: 1.609 });
    expect(kinds(userFake)).toContain('negotiate');
    expect(warnings.some((line) => line.startsWith(`the hub ${url} failed, looking for a protocol without it`))).toBe(
      true,
    );
    expect(
      warnings.some((line) => line.startsWith(`publishing protocol ${hashText(DISTANCE)} to the hub ${url} failed`)),
    ).toBe(true);
  });

  it('gives up on a hub that does not answer within hubTimeoutMs, and leaves it alone for a while', async () => {
    let asked = 0;
    const silent = await rawServer(() => void (asked += 1));
    const { convert, service, userFake, warnings } = await pair(silent.url, {
      hubTimeoutMs: 50,
      thresholds: { lookForProtocolFrom: 1, negotiateFrom: 3 },
    });
    expect(await convert({ miles: 2 }, { target: service.url })).toEqual({ km: 3.219 });
    expect(warnings.find((line) => line.startsWith(`the hub ${silent.url} failed`))).toContain(
      'no answer within 50 ms',
    );
    // The second look skips the hub; the third negotiates.
    expect(await convert({ miles: 3 }, { target: service.url })).toEqual({ km: 4.828 });
    expect(asked).toBe(1);
    expect(kinds(userFake)).not.toContain('negotiate');
    expect(await convert({ miles: 4 }, { target: service.url })).toEqual({ km: 6.437 });
    expect(kinds(userFake)).toContain('negotiate');
    // The agreed protocol is still offered to the hub once (a publish is rare, and bounded alike).
    expect(asked).toBe(2);
    expect(warnings.at(-1)).toMatch(/^publishing protocol [0-9a-f]{40} to the hub .* no answer within 50 ms$/);
  });

  it('refuses a document the hub serves under another hash, and negotiates instead', async () => {
    const listed = hashText(DISTANCE);
    const lying = await rawServer((request, respond) => {
      if (request.url?.startsWith('/protocols?'))
        respond(
          200,
          'application/json',
          JSON.stringify({ protocols: [{ hash: listed, name: 'Distance conversion', description: 'Miles to km.' }] }),
        );
      else if (request.url === `/protocols/${listed}`)
        respond(200, 'text/plain', DISTANCE.replace('3 decimals', '2 decimals'));
      else respond(404, 'application/json', '{}');
    });
    const { convert, service, userFake, warnings } = await pair(lying.url);
    expect(await convert({ miles: 3 }, { target: service.url })).toEqual({ km: 4.828 });
    expect(kinds(userFake)).toContain('negotiate');
    expect(warnings.find((line) => line.startsWith(`protocol ${listed} from the hub`))).toMatch(
      /hashes to [0-9a-f]{40}: refused/,
    );
  });

  it('reads a lying hub only up to its caps: an endless listing or document fails, and is never buffered whole', async () => {
    const endless = endlessFetch();
    const hub = new HubProtocols({ url: 'http://hub.test', fetch: endless.fetch });
    await expect(hub.protocols('weather')).rejects.toMatchObject({
      code: 'PEER_FAILURE',
      message: expect.stringContaining('larger than'),
    });
    expect(endless.pulled()).toBeLessThan(2 * 1024 * 1024);
    endless.reset();
    await expect(hub.protocolText('a'.repeat(40))).rejects.toMatchObject({
      code: 'PEER_FAILURE',
      message: expect.stringContaining('larger than'),
    });
    expect(endless.pulled()).toBeLessThan(1024 * 1024);
  });

  it('refuses a hub option that is not an http(s) URL', async () => {
    expect(
      (
        await failureOf(
          Promise.resolve().then(() => new Sender({ llm: null, hub: 'ftp://hub.example', logger: silentLogger })),
        )
      ).message,
    ).toBe('hub: not an http(s) URL: ftp://hub.example');
  });
});
