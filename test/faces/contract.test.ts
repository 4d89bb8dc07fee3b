// The contract every face keeps, run against each face in FACES (a new face is covered by being listed): composed
// after the Agora mount behind the edge's one guard, its refusals (401, 403, 404, 413, 429) come back in the face's
// own wire shape, public routes answer without a token, OPTIONS answers 204 with Allow, a path no face claims falls
// through to the Agora mount, no hostile body gets a 5xx, and a guarded WebSocket route needs the token on its upgrade.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AGORA_ROUTES } from '../../src/agora/routes.js';
import type { MountRoute } from '../../src/edge/mount.js';
import type { RunningServer } from '../../src/edge/node.js';
import type { EdgeRequest } from '../../src/edge/request.js';
import type { EdgeResponse } from '../../src/edge/response.js';
import { FACES, type Face } from '../../src/exports/faces.js';
import { makeFaces, serveFaces, type FaceTestOptions, type TestFaces } from './_helpers.js';

const TOKEN = 't0k';
const AUTHORIZED = { authorization: `Bearer ${TOKEN}` };
const MAX_BODY_BYTES = 4096;

// Each face's failure body, checked apart from the face's own `failure` (which the edge calls): a face listed
// without its shape here fails the 'declares its error shape' case.
const SHAPES: Record<string, (body: Record<string, unknown>, status: number) => void> = {
  roar: (body) => expect(body).toEqual({ error: expect.any(String), message: expect.any(String) }),
  oap: (body) => expect(body).toEqual({ error: expect.any(String), detail: expect.any(String) }),
  a2a: (body) =>
    expect(body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: expect.any(Number), message: expect.any(String) },
    }),
  mcp: (body) =>
    expect(body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: expect.any(Number), message: expect.any(String) },
    }),
};

const HOSTILE_BODIES = [
  '',
  '{',
  'null',
  '[]',
  '"text"',
  '{"__proto__":{"polluted":true}}',
  '['.repeat(5000),
  '{"a":1e400,"b":-0,"c":12345678901234567890}',
  '\u0000\uffff\ud800',
  Buffer.from([0xff, 0xfe, 0x00, 0xc3]).toString('latin1'),
];

function takes(route: MountRoute, method: string): boolean {
  return route.allow !== undefined && route.allow.split(/,\s*/).includes(method);
}

/** The routes a token guards, the public ones, and the exact routes that take a POST body. */
function routesOf(face: Face) {
  return {
    guarded: face.routes.filter((route) => !route.public),
    open: face.routes.filter((route) => route.public === true || route.public === 'read'),
    posting: face.routes.filter((route) => !route.socket && takes(route, 'POST')),
    prefixes: face.routes.filter((route) => route.prefix),
  };
}

function parsed(response: EdgeResponse | undefined): Record<string, unknown> {
  expect(response).toBeDefined();
  return JSON.parse(String(response!.body)) as Record<string, unknown>;
}

/** Whether an answer is in the face's own failure shape: the keys its `failure` writes, the status kept. */
function expectShape(face: Face, response: EdgeResponse | undefined, status: number): void {
  expect(response?.status).toBe(status);
  const body = parsed(response);
  const own = JSON.parse(String(face.failure(status, 'x').body)) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(Object.keys(own).sort());
  SHAPES[face.name]?.(body, status);
}

function request(method: string, path: string, headers: Record<string, string> = {}, body?: string): EdgeRequest {
  return {
    method,
    path,
    headers: { host: 'agent.test', ...headers },
    body: body === undefined ? undefined : Buffer.from(body, 'latin1'),
  };
}

for (const definition of FACES) {
  describe(`the ${definition.name} face keeps the faces' contract`, () => {
    const make = (options: FaceTestOptions = {}) =>
      makeFaces({ faces: ['agora', definition.name], maxBodyBytes: MAX_BODY_BYTES, ...options });
    const guarded = make({ tokens: [TOKEN] });
    const face = guarded.faces[0]!;
    const routes = routesOf(face);
    // Every answer through the edge, the Agora mount's included (`handle` of the helper leaves those out).
    const send = (faces: TestFaces, edgeRequest: EdgeRequest) => faces.edge.handle(edgeRequest);

    it('is the one face composed, and declares its error shape in this suite', () => {
      expect(guarded.faces.map((each) => each.name)).toEqual([definition.name]);
      expect(SHAPES[definition.name], `add ${definition.name}'s failure shape to SHAPES`).toBeDefined();
      expect(routes.guarded.length + routes.open.length).toBe(face.routes.length);
    });

    it('answers 401 in its own shape on every private route without a token, and passes the token on', async () => {
      expect(routes.guarded.length).toBeGreaterThan(0);
      for (const route of routes.guarded) {
        const refused = await send(guarded, request('POST', route.path, { 'content-type': 'application/json' }, '{}'));
        expectShape(face, refused, 401);
        expect(refused.headers['www-authenticate']).toBe('Bearer');
        const wrong = await send(
          guarded,
          request('POST', route.path, { authorization: 'Bearer nope', 'content-type': 'application/json' }, '{}'),
        );
        expectShape(face, wrong, 401);
        const passed = await send(
          guarded,
          request('POST', route.path, { ...AUTHORIZED, 'content-type': 'application/json' }, '{}'),
        );
        expect(passed.status).not.toBe(401);
        expect(passed.status).toBeLessThan(500);
      }
    });

    it('answers its public routes without a token', async () => {
      for (const route of routes.open) {
        const response = await send(guarded, request('GET', route.path));
        expect(response.status, `GET ${route.path}`).not.toBe(401);
        expect(response.status, `GET ${route.path}`).toBeLessThan(500);
      }
    });

    it("answers 429 in its own shape with Retry-After once the edge's rate limit is spent", async () => {
      const limited = make({ rateLimit: { windowMs: 60_000, max: 2 } });
      const path = face.routes[0]!.path;
      const from = (remoteAddress: string) => ({ ...request('GET', path), remoteAddress });
      expect((await send(limited, from('10.0.0.1'))).status).not.toBe(429);
      expect((await send(limited, from('10.0.0.1'))).status).not.toBe(429);
      const refused = await send(limited, from('10.0.0.1'));
      expectShape(face, refused, 429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      // Another client is still answered.
      expect((await send(limited, from('10.0.0.2'))).status).not.toBe(429);
    });

    it('answers 413 in its own shape for a body over the cap', async () => {
      expect(routes.posting.length).toBeGreaterThan(0);
      for (const route of routes.posting) {
        const response = await send(
          guarded,
          request(
            'POST',
            route.path,
            { ...AUTHORIZED, 'content-type': 'application/json' },
            JSON.stringify({ padding: 'x'.repeat(MAX_BODY_BYTES) }),
          ),
        );
        expectShape(face, response, 413);
      }
    });

    it('answers an unknown path under its prefixes in its own shape, and leaves a path no face claims to the Agora mount', async () => {
      for (const route of routes.prefixes) {
        expectShape(face, await send(guarded, request('GET', `${route.path}/no-such-route`, AUTHORIZED)), 404);
      }
      const elsewhere = await send(guarded, request('GET', '/no-face-claims-this', AUTHORIZED));
      expect([elsewhere.status, parsed(elsewhere)]).toEqual([404, { status: 'failure', error: 'Not found' }]);
      expect(await guarded.handle(request('GET', '/no-face-claims-this', AUTHORIZED))).toBeUndefined();
    });

    it('answers OPTIONS on every route with 204 and Allow, without a token', async () => {
      for (const route of face.routes) {
        const response = await send(guarded, request('OPTIONS', route.path));
        expect(response.status, `OPTIONS ${route.path}`).toBe(204);
        // A path shared with the Agora mount (OAP's `GET /`, Agora's `POST /`) is answered by the mount that takes OPTIONS.
        const owner =
          route.methods !== undefined && !route.methods.includes('OPTIONS')
            ? AGORA_ROUTES.find((agora) => agora.path === route.path)
            : undefined;
        expect(response.headers.allow, `OPTIONS ${route.path}`).toBe(
          (owner ?? route).allow ?? 'GET, HEAD, POST, OPTIONS',
        );
      }
    });

    it('refuses a cross-site POST with 403 in its own shape, and answers the same POST without Origin', async () => {
      for (const route of routes.posting) {
        const crossSite = await send(
          guarded,
          request(
            'POST',
            route.path,
            { ...AUTHORIZED, origin: 'http://evil.example', 'content-type': 'text/plain' },
            '{}',
          ),
        );
        expectShape(face, crossSite, 403);
        const fetchSite = await send(
          guarded,
          request(
            'POST',
            route.path,
            { ...AUTHORIZED, 'sec-fetch-site': 'cross-site', 'content-type': 'text/plain' },
            '{}',
          ),
        );
        expectShape(face, fetchSite, 403);
        const plain = await send(
          guarded,
          request('POST', route.path, { ...AUTHORIZED, 'content-type': 'text/plain' }, '{}'),
        );
        expect(plain.status).not.toBe(403);
        expect(plain.status).toBeLessThan(500);
        // Its own page (Origin of the Host it was sent to) is not cross-site.
        const sameSite = await send(
          guarded,
          request(
            'POST',
            route.path,
            { ...AUTHORIZED, origin: 'http://agent.test', 'content-type': 'text/plain' },
            '{}',
          ),
        );
        expect(sameSite.status).not.toBe(403);
      }
    });

    it('answers every hostile body on every route with JSON below 500, its failures in its own shape', async () => {
      const errors: string[] = [];
      const quiet = make({ tokens: [TOKEN], logger: { info() {}, warn() {}, error: (line) => errors.push(line) } });
      for (const route of face.routes.filter((each) => !each.socket)) {
        for (const body of HOSTILE_BODIES) {
          // Methods a route does not take on a path it shares are the Agora mount's (OAP's `/` takes GET and HEAD).
          for (const method of ['POST', 'GET', 'PUT'].filter(
            (each) => route.methods === undefined || route.methods.includes(each),
          )) {
            const response = await send(quiet, request(method, route.path, AUTHORIZED, body));
            expect(response.status, `${method} ${route.path} ${JSON.stringify(body.slice(0, 20))}`).toBeLessThan(500);
            if (response.events !== undefined) {
              response.events.cancel();
              continue;
            }
            if (response.status >= 400) expectShape(face, response, response.status);
          }
        }
      }
      expect(errors).toEqual([]);
    });

    describe('on a real server', () => {
      let served: RunningServer;
      beforeAll(async () => {
        served = await serveFaces(guarded);
      });
      afterAll(async () => served.close());

      it('answers 401 and 403 in its shape, a public route without a token, and a 413 the client reads', async () => {
        const [privateRoute] = routes.guarded;
        const refused = await fetch(`${served.url}${privateRoute!.path}`, { method: 'POST', body: '{}' });
        expect(refused.status).toBe(401);
        SHAPES[face.name]!((await refused.json()) as Record<string, unknown>, 401);
        for (const route of routes.open.filter((each) => !each.socket)) {
          const response = await fetch(`${served.url}${route.path}`);
          expect(response.status, route.path).toBeLessThan(400);
          await response.arrayBuffer();
        }
        for (const route of routes.posting) {
          const big = await fetch(`${served.url}${route.path}`, {
            method: 'POST',
            headers: AUTHORIZED,
            body: 'x'.repeat(MAX_BODY_BYTES * 4),
          });
          expect(big.status).toBe(413);
          SHAPES[face.name]!((await big.json()) as Record<string, unknown>, 413);
          const crossSite = await fetch(`${served.url}${route.path}`, {
            method: 'POST',
            headers: { ...AUTHORIZED, origin: 'http://evil.example', 'content-type': 'text/plain' },
            body: '{}',
          });
          expect(crossSite.status).toBe(403);
          SHAPES[face.name]!((await crossSite.json()) as Record<string, unknown>, 403);
        }
      });

      it('refuses a WebSocket upgrade to a guarded socket route without the token (401 in its shape) and opens it with one', async () => {
        const upgrade = (path: string, headers: Record<string, string>) =>
          new Promise<{ status: number; body: string }>((resolve, reject) => {
            const socket = new WebSocket(`${served.url.replace('http', 'ws')}${path}`, { headers });
            socket.once('open', () => {
              socket.close();
              resolve({ status: 101, body: '' });
            });
            socket.once('unexpected-response', (_request, response) => {
              let body = '';
              response.on('data', (chunk: Buffer) => (body += String(chunk)));
              response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
            });
            socket.once('error', reject);
          });
        for (const route of face.routes.filter((each) => each.socket)) {
          if (!route.public) {
            const refused = await upgrade(route.path, {});
            expect(refused.status, route.path).toBe(401);
            SHAPES[face.name]!(JSON.parse(refused.body) as Record<string, unknown>, 401);
          }
          expect((await upgrade(route.path, AUTHORIZED)).status, route.path).toBe(101);
        }
      });
    });
  });
}
