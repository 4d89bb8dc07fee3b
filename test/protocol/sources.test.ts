import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hashText } from '../../src/protocol/document.js';
import {
  decodeDataUri,
  encodeDataUri,
  fetchSource,
  isForbiddenAddress,
  resolveSources,
  type SourceOptions,
} from '../../src/protocol/sources.js';

// Golden vectors of agora-spec.md §1.
const WEATHER =
  '---\nname: Weather\ndescription: Weather lookup\nmultiround: false\n---\n\nSender sends {"city": str}. Receiver replies {"t": int}.\n';
const WEATHER_HEX = '2814712b1a1269c180208b599cd5e17b32ac3395';
const METEO = '---\nname: Météo\ndescription: x\nmultiround: false\n---\nè\n';
const METEO_HEX = 'f827eb4b0c00d23021ebb9aed5a89ae3aeb4f92b';
const METEO_BASE64_HASH = '+CfrSwwA0jAh67mu1aia4660+Ss=';
// What Python's urllib.parse.quote(METEO) prints.
const METEO_PYTHON_QUOTED =
  '---%0Aname%3A%20M%C3%A9t%C3%A9o%0Adescription%3A%20x%0Amultiround%3A%20false%0A---%0A%C3%A8%0A';
const PLUS =
  '---\nname: Météo+\ndescription: 1+1=2, a+b\nmultiround: false\n---\nSend "C++" & 50% of the time, é+è.\r\n';

type TestServer = {
  url: string;
  port: number;
  /** Paths requested, in order. */
  requests: string[];
  /** Host headers received, in order. */
  hosts: string[];
  connections: number;
  /** Resolves once every connection the server accepted is closed. */
  allClosed(): Promise<void>;
};

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(async (server) => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }),
  );
});

async function startServer(handler: (request: IncomingMessage, response: ServerResponse) => void): Promise<TestServer> {
  const sockets: Socket[] = [];
  const state = { requests: [] as string[], hosts: [] as string[], connections: 0 };
  const server = createServer((request, response) => {
    state.requests.push(request.url ?? '');
    state.hosts.push(request.headers.host ?? '');
    // The client may hang up mid-body on purpose; that is not a test failure.
    response.on('error', () => {});
    handler(request, response);
  });
  server.on('connection', (socket) => {
    state.connections += 1;
    sockets.push(socket);
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests: state.requests,
    hosts: state.hosts,
    get connections() {
      return state.connections;
    },
    async allClosed() {
      await Promise.all(sockets.map((socket) => (socket.destroyed ? undefined : once(socket, 'close'))));
    },
  };
}

function serveText(text: string | Buffer) {
  return (_request: IncomingMessage, response: ServerResponse) => {
    response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    response.end(text);
  };
}

function recordingLogger() {
  const warnings: string[] = [];
  return { warnings, logger: { warn: (message: string) => warnings.push(message) } };
}

const LOOPBACK: SourceOptions = { allowPrivateSources: true };

describe('decodeDataUri', () => {
  it('decodes the percent-encoded form byte by byte, keeping UTF-8', () => {
    expect(decodeDataUri(`data:text/plain;charset=utf-8,${METEO_PYTHON_QUOTED}`)).toEqual(Buffer.from(METEO, 'utf8'));
  });

  it('keeps `+` as a plus sign, not a space', () => {
    expect(decodeDataUri('data:text/plain;charset=utf-8,1%2B1+2')?.toString('utf8')).toBe('1+1+2');
  });

  it('decodes the base64 form', () => {
    const uri = `data:text/plain;charset=utf-8;base64,${Buffer.from(PLUS, 'utf8').toString('base64')}`;
    expect(decodeDataUri(uri)).toEqual(Buffer.from(PLUS, 'utf8'));
  });

  it('accepts text/markdown, a missing charset, any case and raw UTF-8', () => {
    expect(decodeDataUri('data:text/markdown,%23%20Title')?.toString()).toBe('# Title');
    expect(decodeDataUri('DATA:Text/Plain;Charset=UTF-8;BASE64,aGk=')?.toString()).toBe('hi');
    expect(decodeDataUri('data:text/plain,M%C3%A9t%C3%A9o')?.toString()).toBe('Météo');
    expect(decodeDataUri('data:text/plain,Météo #1')?.toString()).toBe('Météo #1');
    expect(decodeDataUri('data:,plain')?.toString()).toBe('plain');
  });

  it('returns undefined for other media types and malformed URIs', () => {
    expect(decodeDataUri('data:application/json,%7B%7D')).toBeUndefined();
    expect(decodeDataUri('data:text/html;base64,aGk=')).toBeUndefined();
    expect(decodeDataUri('data:text/plain;charset=utf-8')).toBeUndefined();
    expect(decodeDataUri('data:text/plain,50%')).toBeUndefined();
    expect(decodeDataUri('data:text/plain,%zz')).toBeUndefined();
    expect(decodeDataUri('data:text/plain,%4')).toBeUndefined();
    expect(decodeDataUri('data:text/plain;base64,!!!!')).toBeUndefined();
    expect(decodeDataUri('data:text/plain;base64,aGVsb')).toBeUndefined();
    expect(decodeDataUri('http://example.test/x')).toBeUndefined();
  });
});

describe('encodeDataUri', () => {
  it('percent-encodes like Python urllib.parse.quote', () => {
    expect(encodeDataUri('hello world/+')).toBe('data:text/plain;charset=utf-8,hello%20world/%2B');
    expect(encodeDataUri(METEO)).toBe(`data:text/plain;charset=utf-8,${METEO_PYTHON_QUOTED}`);
    expect(encodeDataUri("~_.-!*()'az09")).toBe('data:text/plain;charset=utf-8,~_.-%21%2A%28%29%27az09');
  });

  it('round-trips any text through decodeDataUri', () => {
    for (const text of [METEO, PLUS, WEATHER.replace(/\n/g, '\r\n'), '\uFEFFbom 🌦️ % + # ? & =', '']) {
      expect(decodeDataUri(encodeDataUri(text))?.toString('utf8')).toBe(text);
    }
  });
});

describe('resolveSources', () => {
  it('resolves a data URI to the document of the expected hash', async () => {
    const { logger, warnings } = recordingLogger();
    const document = await resolveSources(METEO_HEX, [encodeDataUri(METEO)], { logger });
    expect(document?.hash).toBe(METEO_HEX);
    expect(document?.text).toBe(METEO);
    expect(document?.metadata.name).toBe('Météo');
    expect(warnings).toEqual([]);
  });

  it('accepts the expected hash in base64 as well', async () => {
    const document = await resolveSources(METEO_BASE64_HASH, [encodeDataUri(METEO)], {
      logger: recordingLogger().logger,
    });
    expect(document?.hash).toBe(METEO_HEX);
  });

  it('skips a source whose hash does not match and uses the next', async () => {
    const server = await startServer(serveText(PLUS));
    const { logger, warnings } = recordingLogger();
    const document = await resolveSources(WEATHER_HEX, [`${server.url}/wrong`, encodeDataUri(WEATHER)], {
      ...LOOPBACK,
      logger,
    });
    expect(document?.hash).toBe(WEATHER_HEX);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${server.url}/wrong`);
    expect(warnings[0]).toContain(`hashes to ${hashText(PLUS)}`);
  });

  it('takes an http source whose bytes match, CRLF and all', async () => {
    const crlf = WEATHER.replace(/\n/g, '\r\n');
    const server = await startServer(serveText(crlf));
    const document = await resolveSources('7229e2d778fe61c99af362a5c879cfd015b80766', [`${server.url}/doc`], {
      ...LOOPBACK,
      logger: recordingLogger().logger,
    });
    expect(document?.text).toBe(crlf);
  });

  it('skips unknown schemes, other media types and failing http sources, one warning each', async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(404).end('nope');
    });
    const { logger, warnings } = recordingLogger();
    const sources = [
      'file:///etc/passwd',
      'ftp://example.test/doc',
      'data:application/json,%7B%7D',
      `${server.url}/missing`,
      encodeDataUri(WEATHER),
    ];
    const document = await resolveSources(WEATHER_HEX, sources, { ...LOOPBACK, logger });
    expect(document?.hash).toBe(WEATHER_HEX);
    expect(warnings).toHaveLength(4);
    expect(warnings[0]).toContain('file:///etc/passwd');
    expect(warnings[1]).toContain('ftp://example.test/doc');
    expect(warnings[2]).toContain('data:application/json');
    expect(warnings[3]).toMatch(/HTTP 404/);
  });

  it('truncates a long data URI in its warning', async () => {
    const { logger, warnings } = recordingLogger();
    const long = encodeDataUri(PLUS.repeat(20));
    await resolveSources(WEATHER_HEX, [long], { logger });
    expect(warnings).toHaveLength(1);
    const shown = /skipped: (\S+) hashes to/.exec(warnings[0] ?? '')?.[1] ?? '';
    expect(shown.startsWith('data:text/plain;charset=utf-8,---')).toBe(true);
    expect(shown.endsWith('…')).toBe(true);
    expect(shown.length).toBeLessThanOrEqual(100);
  });

  it('skips a matching document whose metadata is invalid', async () => {
    const invalid = '---\nname: Broken\ndescription: x\nmultiround: maybe\n---\nbody\n';
    const { logger, warnings } = recordingLogger();
    const document = await resolveSources(hashText(invalid), [encodeDataUri(invalid)], { logger });
    expect(document).toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/multiround/);
  });

  it('returns undefined when no source matches', async () => {
    const { logger } = recordingLogger();
    expect(await resolveSources(WEATHER_HEX, [], { logger })).toBeUndefined();
    expect(await resolveSources(WEATHER_HEX, [encodeDataUri(METEO)], { logger })).toBeUndefined();
  });
});

describe('fetchSource', () => {
  it('returns the exact bytes of a loopback source when private sources are allowed', async () => {
    const bytes = Buffer.from(PLUS, 'utf8');
    const server = await startServer(serveText(bytes));
    expect(await fetchSource(`${server.url}/doc`, LOOPBACK)).toEqual(bytes);
    await server.allClosed();
  });

  it('connects to the address it vetted and keeps the hostname in the Host header', async () => {
    const server = await startServer(serveText(WEATHER));
    const lookup = vi.fn(async () => [{ address: '127.0.0.1', family: 4 as const }]);
    const bytes = await fetchSource(`http://public.test:${server.port}/doc`, { ...LOOPBACK, lookup });
    expect(bytes.toString('utf8')).toBe(WEATHER);
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledWith('public.test');
    expect(server.hosts).toEqual([`public.test:${server.port}`]);
  });

  it('names the status of a non-2xx answer', async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(500).end('boom');
    });
    await expect(fetchSource(`${server.url}/doc`, LOOPBACK)).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
      message: expect.stringMatching(/HTTP 500/),
    });
  });

  it('refuses a streamed body over 256 KiB and closes the connection', async () => {
    const server = await startServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(16 * 1024, 'a');
      for (let written = 0; written < 300 * 1024; written += chunk.length) response.write(chunk);
      response.end();
    });
    await expect(fetchSource(`${server.url}/big`, LOOPBACK)).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
      message: expect.stringMatching(/larger than 262144 bytes/),
    });
    await server.allClosed();
  });

  it('refuses a declared Content-Length over the cap before reading the body', async () => {
    const server = await startServer(serveText(Buffer.alloc(300 * 1024, 'a')));
    await expect(fetchSource(`${server.url}/big`, LOOPBACK)).rejects.toMatchObject({
      message: expect.stringMatching(/larger than 262144 bytes/),
    });
    await server.allClosed();
  });

  it('accepts a body of exactly maxBytes and refuses one byte more', async () => {
    const server = await startServer((request, response) => {
      response.end(request.url === '/ten' ? '0123456789' : '0123456789!');
    });
    expect((await fetchSource(`${server.url}/ten`, { ...LOOPBACK, maxBytes: 10 })).toString()).toBe('0123456789');
    await expect(fetchSource(`${server.url}/eleven`, { ...LOOPBACK, maxBytes: 10 })).rejects.toMatchObject({
      message: expect.stringMatching(/larger than 10 bytes/),
    });
  });

  it('gives up on a server that never answers within the timeout and closes the connection', async () => {
    const server = await startServer(() => {});
    // The message names our own bound, so the test runner's timeout cannot be what ended the fetch.
    await expect(fetchSource(`${server.url}/slow`, { ...LOOPBACK, timeoutMs: 200 })).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
      message: expect.stringMatching(/no answer within 200 ms/),
    });
    expect(server.requests).toEqual(['/slow']);
    await server.allClosed();
  });

  it('gives up on a DNS lookup that never answers within the timeout', async () => {
    const lookup = () => new Promise<{ address: string; family: 4 | 6 }[]>(() => {});
    await expect(fetchSource('http://slow-dns.test/doc', { timeoutMs: 100, lookup })).rejects.toMatchObject({
      message: expect.stringMatching(/no answer within 100 ms/),
    });
  });

  it('reports a host that does not resolve', async () => {
    const lookup = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND' });
    };
    await expect(fetchSource('http://nowhere.test/doc', { lookup })).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
      message: expect.stringMatching(/cannot resolve nowhere\.test/),
    });
  });

  it('follows 3 redirects and refuses a chain of 4', async () => {
    const statuses = [301, 302, 303, 307, 308];
    const server = await startServer((request, response) => {
      const left = Number(/^\/hop\/(\d+)$/.exec(request.url ?? '')?.[1] ?? 0);
      if (left === 0) return serveText(WEATHER)(request, response);
      response.writeHead(statuses[left % statuses.length] ?? 302, { location: `/hop/${left - 1}` }).end();
    });
    expect((await fetchSource(`${server.url}/hop/3`, LOOPBACK)).toString()).toBe(WEATHER);
    server.requests.length = 0;
    await expect(fetchSource(`${server.url}/hop/4`, LOOPBACK)).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
      message: expect.stringMatching(/more than 3 redirects/),
    });
    expect(server.requests).toEqual(['/hop/4', '/hop/3', '/hop/2', '/hop/1']);
    await server.allClosed();
  });

  it('re-resolves the host of each redirect and re-checks its scheme', async () => {
    const server = await startServer((request, response) => {
      if (request.url === '/to-other-host')
        response.writeHead(302, { location: `http://other.test:${server.port}/doc` }).end();
      else if (request.url === '/to-file') response.writeHead(302, { location: 'file:///etc/passwd' }).end();
      else serveText(WEATHER)(request, response);
    });
    const lookup = vi.fn(async () => [{ address: '127.0.0.1', family: 4 as const }]);
    expect(
      (await fetchSource(`http://first.test:${server.port}/to-other-host`, { ...LOOPBACK, lookup })).toString(),
    ).toBe(WEATHER);
    expect(lookup.mock.calls).toEqual([['first.test'], ['other.test']]);
    expect(server.hosts).toEqual([`first.test:${server.port}`, `other.test:${server.port}`]);
    await expect(fetchSource(`${server.url}/to-file`, LOOPBACK)).rejects.toMatchObject({
      message: expect.stringMatching(/unsupported scheme file:/),
    });
  });

  it('refuses a loopback address without connecting when private sources are not allowed', async () => {
    const server = await startServer(serveText(WEATHER));
    const lookup = vi.fn(async () => [{ address: '8.8.8.8', family: 4 as const }]);
    await expect(fetchSource(`${server.url}/doc`, { lookup })).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
      message: expect.stringMatching(/127\.0\.0\.1 is a loopback, private/),
    });
    // The URL parser turns odd spellings of 127.0.0.1 into the canonical form, which is then refused.
    await expect(fetchSource(`http://0x7f.1:${server.port}/doc`, { lookup })).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
    });
    await expect(fetchSource(`http://[::ffff:127.0.0.1]:${server.port}/doc`, { lookup })).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
    });
    expect(lookup).not.toHaveBeenCalled();
    expect(server.connections).toBe(0);
    expect(server.requests).toEqual([]);
  });

  it('refuses an IPv6 loopback literal', async () => {
    await expect(fetchSource('http://[::1]/x')).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
      message: expect.stringMatching(/::1 is a loopback, private/),
    });
  });

  it('refuses a hostname that resolves to a metadata, private or mixed address', async () => {
    const answers: Record<string, { address: string; family: 4 | 6 }[]> = {
      'metadata.test': [{ address: '169.254.169.254', family: 4 }],
      'evil.test': [{ address: '::ffff:10.0.0.1', family: 6 }],
      'mixed.test': [
        { address: '8.8.8.8', family: 4 },
        { address: '192.168.1.10', family: 4 },
      ],
    };
    const lookup = async (hostname: string) => answers[hostname] ?? [];
    await expect(fetchSource('http://metadata.test/latest/meta-data/', { lookup })).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
      message: expect.stringMatching(/metadata\.test resolves to 169\.254\.169\.254/),
    });
    await expect(fetchSource('http://evil.test', { lookup })).rejects.toMatchObject({
      message: expect.stringMatching(/evil\.test resolves to ::ffff:10\.0\.0\.1/),
    });
    await expect(fetchSource('https://mixed.test/doc', { lookup })).rejects.toMatchObject({
      message: expect.stringMatching(/resolves to 192\.168\.1\.10/),
    });
    await expect(fetchSource('http://empty.test/doc', { lookup })).rejects.toMatchObject({
      message: expect.stringMatching(/resolves to no address/),
    });
  });

  it('refuses invalid URLs and schemes other than http(s)', async () => {
    await expect(fetchSource('not a url')).rejects.toMatchObject({
      code: 'SOURCE_FAILED',
      message: expect.stringMatching(/not a valid URL/),
    });
    await expect(fetchSource('file:///etc/passwd')).rejects.toMatchObject({
      message: expect.stringMatching(/unsupported scheme file:/),
    });
  });

  it('keeps credentials out of error messages', async () => {
    const error = await fetchSource('http://user:secret@[::1]/x').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).not.toContain('secret');
  });
});

describe('isForbiddenAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '100.64.0.1',
    '100.127.255.255',
    '169.254.169.254',
    '169.254.1.1',
    '168.63.129.16',
    '0.0.0.0',
    '0.1.2.3',
    '192.0.0.192',
    '192.0.2.1',
    '198.18.0.1',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '[::1]',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::FFFF:7F00:1',
    '::ffff:10.0.0.1',
    '::ffff:a9fe:a9fe',
    '::127.0.0.1',
    '64:ff9b::127.0.0.1',
    '2002:7f00:1::1',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    'fe80::1%eth0',
    'fec0::1',
    'ff02::1',
    '100::1',
    '2001:db8::1',
    '2001::1',
    'not-an-ip',
    '127.1',
    '',
  ])('forbids %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.255.255',
    '192.169.0.1',
    '223.255.255.255',
    '2606:4700::1',
    '[2606:4700::1]',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::8.8.8.8',
    '2002:808:808::1',
  ])('allows %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });
});

describe('resolveSources bounds (issue 11, finding 7)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('tries at most 5 sources of a query, however many it lists', async () => {
    const server = await startServer((_request, response) => response.writeHead(404).end());
    const { warnings, logger } = recordingLogger();
    const sources = Array.from({ length: 1000 }, (_, index) => `${server.url}/${index}`);
    expect(await resolveSources(WEATHER_HEX, sources, { ...LOOPBACK, logger })).toBeUndefined();
    expect(server.requests).toEqual(['/0', '/1', '/2', '/3', '/4']);
    expect(warnings[0]).toBe('Protocol sources: 1000 given, only the first 5 tried');
  });

  it('gives all the sources of a query one 8 s deadline, however slow each one is', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let arrived!: () => void;
    const first = new Promise<void>((resolve) => (arrived = resolve));
    const server = await startServer(() => arrived());
    const { warnings, logger } = recordingLogger();
    let settled = false;
    // Each source alone may take 60 s: only the query's deadline can end this in time.
    const result = resolveSources(
      WEATHER_HEX,
      Array.from({ length: 8 }, (_, index) => `${server.url}/slow-${index}`),
      { ...LOOPBACK, logger, timeoutMs: 60_000 },
    ).finally(() => (settled = true));
    await first;
    await vi.advanceTimersByTimeAsync(7_999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await result).toBeUndefined();
    expect(server.requests).toEqual(['/slow-0']);
    expect(warnings.join('\n')).toMatch(/deadline for this query's sources passed/);
    expect(warnings.join('\n')).toMatch(/8000 ms deadline passed, the remaining sources were not tried/);
    await server.allClosed();
  });

  it('refuses a document over 64 KiB from any source, data: included, and takes one at the cap', async () => {
    const body = (size: number) => {
      const head = '---\nname: Big\ndescription: x\nmultiround: false\n---\n';
      return head + 'a'.repeat(size - head.length);
    };
    const large = body(64 * 1024 + 1);
    const fits = body(64 * 1024);
    const server = await startServer(serveText(large));
    const { warnings, logger } = recordingLogger();
    expect(
      await resolveSources(
        hashText(large),
        [
          encodeDataUri(large),
          `data:text/plain;base64,${Buffer.from(large).toString('base64')}`,
          `${server.url}/large`,
        ],
        { ...LOOPBACK, logger },
      ),
    ).toBeUndefined();
    expect(warnings).toHaveLength(3);
    expect(warnings.slice(0, 2).every((warning) => /larger than 65536 bytes/.test(warning))).toBe(true);
    expect(warnings[2]).toMatch(/larger than 65536 bytes/);
    expect((await resolveSources(hashText(fits), [encodeDataUri(fits)], { logger }))?.text).toBe(fits);
    // The cap is an option (`--max-document`).
    expect(await resolveSources(hashText(fits), [encodeDataUri(fits)], { logger, maxBytes: 1024 })).toBeUndefined();
  });
});
