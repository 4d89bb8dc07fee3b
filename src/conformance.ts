// The wire profile's conformance cases (docs/protocol.md), run over HTTP against any Agora agent: ours, another
// implementation, or the Python SDK's receiver (whose documented quirks are accepted, and said so).
import { randomBytes } from 'node:crypto';
import { encodeHash, hashText } from './protocol/document.js';
import { plural } from './_plural.js';
import { AgoraError, FIXED_MESSAGES, isAgoraError, networkFailure } from './errors.js';
import { readCapped } from './sender/transport.js';

/** The outcome of one case: passed, failed (with what was wrong), or skipped (with why). */
export type CaseResult = { name: string; status: 'pass' | 'fail' | 'skip'; detail?: string };

/** Options of {@link checkAgent}. */
export type CheckOptions = {
  fetch?: typeof fetch;
  /** Bound on each request, in ms (default 10 000). */
  timeoutMs?: number;
  /** Bearer token, for an agent that requires one. */
  token?: string;
  /** Called after each case, as it completes (progress). */
  onCase?: (result: CaseResult) => void;
};

type Reply = { status: number; type: string; text: string; json: unknown };

class CaseFailure extends Error {}
class CaseSkip extends Error {}

// Most of a reply read: every case's reply is far smaller, and a larger one fails its case.
const MAX_CHECKED_BYTES = 1024 * 1024;

const fail = (detail: string): never => {
  throw new CaseFailure(detail);
};
const skip = (detail: string): never => {
  throw new CaseSkip(detail);
};
const show = (value: unknown) => JSON.stringify(value)?.slice(0, 160) ?? String(value);

/** A failure reply in our shape or the Python SDK's, its text; else undefined. */
function failureText(json: unknown): string | undefined {
  if (!json || typeof json !== 'object') return undefined;
  const reply = json as Record<string, unknown>;
  if (reply.status === 'failure' && typeof reply.error === 'string') return reply.error;
  if (reply.status === 'error' && typeof reply.message === 'string') return reply.message;
  return undefined;
}

/**
 * Runs the conformance cases against the agent at `url`, one request at a time; resolves to every case's result.
 * @example const results = await checkAgent('http://127.0.0.1:3000'); const failed = results.filter((r) => r.status === 'fail');
 */
export async function checkAgent(url: string, options: CheckOptions = {}): Promise<CaseResult[]> {
  const base = url.replace(/[?#].*$/, '').replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch;
  const request = async (method: string, path: string, body?: string): Promise<Reply> => {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let response: Response;
    try {
      response = await doFetch(`${base}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      });
    } catch (error) {
      // An agent that cannot be reached fails every case the same way: one error, not one line per case.
      if (error instanceof Error && error.name === 'TimeoutError')
        throw new CaseFailure(`no reply within ${options.timeoutMs ?? 10_000} ms`);
      throw new AgoraError('PEER_FAILURE', `${method} ${base}${path}: ${networkFailure(error)}`, { cause: error });
    }
    // Read up to a cap, never whole: the agent checked may be anyone's.
    const text = (await readCapped(response, MAX_CHECKED_BYTES, `${method} ${path}`)).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, type: response.headers.get('content-type') ?? '', text, json };
  };
  const post = (path: string, value: unknown) => request('POST', path, JSON.stringify(value));

  const results: CaseResult[] = [];
  let listing: Record<string, string[]> | undefined;
  let python = false;
  const run = async (name: string, body: () => Promise<string | void>) => {
    let result: CaseResult;
    try {
      const note = await body();
      result = { name, status: 'pass', ...(note ? { detail: note } : {}) };
    } catch (error) {
      if (error instanceof CaseSkip) result = { name, status: 'skip', detail: error.message };
      else if (error instanceof CaseFailure) result = { name, status: 'fail', detail: error.message };
      else if (isAgoraError(error) && error.code === 'PEER_FAILURE' && error.cause !== undefined) throw error;
      else
        result = {
          name,
          status: 'fail',
          detail: `request failed: ${error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)}`,
        };
    }
    results.push(result);
    options.onCase?.(result);
  };
  /** A JSON failure reply with this status and text (the Python shape accepted for a Python-like agent). */
  const expectFailure = (reply: Reply, status: number, text: string | RegExp, pythonText?: string): void => {
    const got = failureText(reply.json);
    if (python && pythonText !== undefined && reply.status === 200 && got === pythonText) return;
    if (reply.status !== status) fail(`expected HTTP ${status}, got ${reply.status}: ${reply.text.slice(0, 120)}`);
    if (!reply.type.includes('application/json')) fail(`expected a JSON reply, got ${reply.type || 'no content type'}`);
    if (got === undefined) return fail(`expected {"status":"failure","error":…}, got ${show(reply.json)}`);
    if (typeof text === 'string' ? got !== text : !text.test(got))
      fail(`expected the error ${typeof text === 'string' ? JSON.stringify(text) : text}, got ${JSON.stringify(got)}`);
  };

  await run('GET /wellknown lists hash → sources', async () => {
    const reply = await request('GET', '/wellknown');
    // Flask's 404 page (HTML) is the Python SDK's answer; a JSON 404 is an agent, or a server, at another path.
    if (reply.status === 404 && !reply.type.includes('application/json')) {
      python = true;
      return skip('no /wellknown (404): a Python SDK 0.2.0 agent, whose quirks are accepted from here on');
    }
    if (reply.status === 404) fail(`HTTP 404: no Agora agent at ${base} (is it the agent's base URL?)`);
    if (reply.status !== 200) fail(`expected HTTP 200, got ${reply.status}`);
    const json = reply.json;
    if (!json || typeof json !== 'object' || Array.isArray(json)) fail(`expected a JSON object, got ${show(json)}`);
    for (const [key, sources] of Object.entries(json as object)) {
      if (!/^[0-9a-fA-F]{40}$/.test(key) && !/^[A-Za-z0-9+/]{27}=$/.test(key))
        fail(`${JSON.stringify(key)} is not a hash (hex or base64)`);
      if (!Array.isArray(sources) || !sources.length || !sources.every((source) => typeof source === 'string'))
        fail(`${key}: expected a non-empty array of sources`);
    }
    listing = json as Record<string, string[]>;
    return `${plural(Object.keys(listing).length, 'protocol')} listed`;
  });

  await run('GET /protocols/:hash serves the exact bytes, as UTF-8 text', async () => {
    const first = Object.keys(listing ?? {})[0];
    if (!first) return skip(listing ? 'no protocol listed' : 'no /wellknown');
    const hex = first.length === 40 ? first.toLowerCase() : Buffer.from(first, 'base64').toString('hex');
    const reply = await request('GET', `/protocols/${hex}`);
    if (reply.status !== 200) fail(`expected HTTP 200, got ${reply.status}`);
    if (!/^text\/plain/.test(reply.type) || !/charset=utf-8/i.test(reply.type))
      fail(`expected text/plain; charset=utf-8, got ${reply.type}`);
    if (hashText(reply.text) !== hex) fail(`the text does not hash to ${hex}`);
  });

  await run('POST / with a body that is not JSON answers 400', async () => {
    if (python) return skip('the Python SDK answers this with an HTML error page');
    expectFailure(await request('POST', '/', '{not json'), 400, /./);
  });

  await run('POST / without body answers 400 naming the field', async () => {
    if (python) return skip('the Python SDK does not check the body');
    expectFailure(await post('/', { protocolHash: null }), 400, /body/);
  });

  await run('POST / under an unknown hash with no source: Unsupported protocol', async () => {
    const hash = encodeHash(hashText(`agora check ${randomBytes(8).toString('hex')}`), python ? 'base64' : 'hex');
    expectFailure(
      await post('/', { protocolHash: hash, protocolSources: [], body: {} }),
      200,
      FIXED_MESSAGES.UNSUPPORTED_PROTOCOL,
      'Failed to download protocol',
    );
  });

  await run('POST / under a listed hash, in base64, is not refused as unknown', async () => {
    const first = Object.keys(listing ?? {})[0];
    if (!first) return skip(listing ? 'no protocol listed' : 'no /wellknown');
    const hex = first.length === 40 ? first.toLowerCase() : Buffer.from(first, 'base64').toString('hex');
    const reply = await post('/', { protocolHash: encodeHash(hex, 'base64'), protocolSources: [], body: {} });
    if (reply.status !== 200) fail(`expected HTTP 200, got ${reply.status}`);
    if (failureText(reply.json) === FIXED_MESSAGES.UNSUPPORTED_PROTOCOL)
      fail('the base64 form of a listed hash was refused as unknown');
  });

  await run('POST / in natural language: an answer, or the fixed refusal', async () => {
    const reply = await post('/', { protocolHash: null, protocolSources: [], body: 'Hello! What can you do?' });
    if (reply.status !== 200) fail(`expected HTTP 200, got ${reply.status}`);
    const json = reply.json as Record<string, unknown> | undefined;
    if (json?.status === 'success' && 'body' in json) return 'answered';
    const text = failureText(json);
    if (text === FIXED_MESSAGES.NATURAL_LANGUAGE_UNSUPPORTED || text === FIXED_MESSAGES.LLM_UNAVAILABLE)
      return `refused: ${text}`;
    fail(`expected a success or a fixed failure, got ${show(json)}`);
  });

  await run('a conversation: id, expiry, DELETE, then Conversation expired', async () => {
    const started = await post('/', { protocolHash: null, protocolSources: [], body: 'Hello!', multiround: true });
    const json = started.json as Record<string, unknown> | undefined;
    if (json?.status !== 'success')
      return skip(`natural language is not answered here (${failureText(json) ?? show(json)})`);
    const id = json.conversationId;
    if (typeof id !== 'string' || id.length < 16) fail(`expected a conversationId of 16+ characters, got ${show(id)}`);
    if (!python && !Number.isInteger(json.conversationExpires))
      fail(`expected an integer conversationExpires, got ${show(json.conversationExpires)}`);
    const path = `/conversations/${encodeURIComponent(String(id))}`;
    const ended = await request('DELETE', path);
    if (ended.status !== 200 || (ended.json as Record<string, unknown> | undefined)?.status !== 'success')
      fail(`DELETE: expected HTTP 200 success, got ${ended.status} ${ended.text.slice(0, 120)}`);
    expectFailure(
      await post(path, { body: 'Still there?' }),
      200,
      FIXED_MESSAGES.CONVERSATION_EXPIRED,
      'Conversation not found.',
    );
  });

  await run('POST /conversations/:id never known: 404 Conversation not found', async () => {
    expectFailure(
      await post(`/conversations/${randomBytes(12).toString('hex')}`, { body: 'hi' }),
      404,
      FIXED_MESSAGES.CONVERSATION_NOT_FOUND,
      'Conversation not found.',
    );
  });

  await run('an unknown path answers a JSON 404, not HTML', async () => {
    if (python) return skip('the Python SDK (Flask) answers HTML');
    expectFailure(await request('GET', `/no-such-route-${randomBytes(4).toString('hex')}`), 404, /./);
  });

  return results;
}
