// An emulation of the Python SDK `agora-protocol` 0.2.0 on the wire (spec §7), both ways: its Flask receiver,
// and its sender's request pattern. Behaviour follows the spec's list of quirks, nothing more; and, as its
// toolformers and routines do, the receiver reads a protocol query's body as text (a JSON object makes them fail
// with `unhashable type: 'slice'`).
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the Python receiver got. */
export type PythonRequest = { method: string; path: string; json?: any };

/** What the emulated receiver's "LLM or routine" answers: a function of the protocol text, body and turn. */
export type PythonAnswer = (query: {
  protocol: string | null;
  body: unknown;
  turn: number;
  conversationId: string | null;
}) => unknown;

/** Options of {@link startPythonPeer}. */
export type PythonPeerOptions = {
  answer?: PythonAnswer;
  /** Protocols its toolformer judges it cannot execute. */
  unsuitable?: (text: string) => boolean;
  /** Seconds after creation when a conversation vanishes (default 300, the SDK's). */
  conversationSeconds?: number;
};

/** A running Python-style receiver. */
export type PythonPeer = {
  url: string;
  requests: PythonRequest[];
  protocols: Map<string, string>;
  close(): Promise<void>;
};

/** SHA1 as the Python SDK writes it: base64 with padding. */
export function pythonHash(text: string): string {
  return createHash('sha1').update(text, 'utf8').digest('base64');
}

/** `urllib.parse.quote(text)` in a data URI, as the Python sender builds its sources. */
export function pythonDataUri(text: string): string {
  const safe = /[A-Za-z0-9_.\-~/]/;
  let encoded = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const char = String.fromCharCode(byte);
    encoded += byte < 0x80 && safe.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return `data:text/plain;charset=utf-8,${encoded}`;
}

// `urllib.parse.unquote`: percent-decoding as UTF-8, `+` stays `+`.
function unquote(text: string): string {
  return decodeURIComponent(text.replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
}

async function download(source: string): Promise<string | undefined> {
  if (source.startsWith('data:')) {
    const comma = source.indexOf(',');
    if (comma < 0) return undefined;
    const header = source.slice(5, comma);
    const data = source.slice(comma + 1);
    return header.endsWith(';base64') ? Buffer.from(data, 'base64').toString('utf8') : unquote(data);
  }
  try {
    const response = await fetch(source);
    return response.ok ? await response.text() : undefined;
  } catch {
    return undefined;
  }
}

function readJson(request: IncomingMessage): Promise<any> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        resolve(undefined);
      }
    });
  });
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

const FLASK_404 =
  '<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>The requested URL was not found on the server.</p>\n';

/** Starts the emulated Python receiver on 127.0.0.1, port 0. */
export async function startPythonPeer(options: PythonPeerOptions = {}): Promise<PythonPeer> {
  const requests: PythonRequest[] = [];
  const protocols = new Map<string, string>();
  const conversations = new Map<string, { hash: string | null; createdAt: number; turn: number }>();
  const lifetimeMs = (options.conversationSeconds ?? 300) * 1000;
  const answer: PythonAnswer = options.answer ?? (({ body }) => body);

  // The SDK takes the hash as given (base64) and needs both fields, on every request.
  async function protocolOf(
    json: any,
  ): Promise<{ ok: true; hash: string | null; text: string | null } | { ok: false; message: string }> {
    if (!json || typeof json !== 'object' || !('protocolHash' in json) || !('protocolSources' in json)) {
      return { ok: false, message: 'protocolHash and protocolSources are required' };
    }
    const hash: unknown = json.protocolHash;
    if (hash === null) return { ok: true, hash: null, text: null };
    if (typeof hash !== 'string') return { ok: false, message: 'Failed to download protocol' };
    const known = protocols.get(hash);
    if (known !== undefined) return { ok: true, hash, text: known };
    for (const source of Array.isArray(json.protocolSources) ? json.protocolSources : []) {
      if (typeof source !== 'string') continue;
      const text = await download(source);
      // A hex hash never equals a base64 digest: that is how the SDK refuses hex.
      if (text !== undefined && pythonHash(text) === hash) {
        protocols.set(hash, text);
        return { ok: true, hash, text };
      }
    }
    return { ok: false, message: 'Failed to download protocol' };
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://peer').pathname;
    const method = request.method ?? 'GET';
    const json = method === 'POST' ? await readJson(request) : undefined;
    requests.push({ method, path, ...(json !== undefined ? { json } : {}) });
    const conversationMatch = /^\/conversations\/([^/]+)$/.exec(path);
    if (method === 'POST' && path === '/') {
      const protocol = await protocolOf(json);
      if (!protocol.ok) return sendJson(response, 200, { status: 'error', message: protocol.message });
      if (protocol.text !== null && options.unsuitable?.(protocol.text)) {
        return sendJson(response, 200, { status: 'error', message: `${protocol.hash} is not suitable for execution` });
      }
      if (protocol.text !== null && typeof json.body !== 'string')
        return sendJson(response, 200, { status: 'error', message: "unhashable type: 'slice'" });
      const conversationId = json.multiround === true ? randomUUID() : null;
      const body = answer({ protocol: protocol.text, body: json.body, turn: 1, conversationId });
      if (conversationId === null) return sendJson(response, 200, { status: 'success', body });
      conversations.set(conversationId, { hash: protocol.hash, createdAt: Date.now(), turn: 1 });
      return sendJson(response, 200, { status: 'success', body, conversationId });
    }
    if (conversationMatch) {
      const id = decodeURIComponent(conversationMatch[1]!);
      const conversation = conversations.get(id);
      // Conversations vanish a fixed time after creation: no sliding expiry, no tombstone.
      if (conversation && Date.now() - conversation.createdAt > lifetimeMs) conversations.delete(id);
      if (!conversations.has(id) || !conversation)
        return sendJson(response, 200, { status: 'error', message: 'Conversation not found.' });
      if (method === 'DELETE') {
        conversations.delete(id);
        return sendJson(response, 200, { status: 'success' });
      }
      if (method === 'POST') {
        const protocol = await protocolOf(json);
        if (!protocol.ok) return sendJson(response, 200, { status: 'error', message: protocol.message });
        if (protocol.text !== null && typeof json.body !== 'string')
          return sendJson(response, 200, { status: 'error', message: "unhashable type: 'slice'" });
        conversation.turn += 1;
        const body = answer({ protocol: protocol.text, body: json.body, turn: conversation.turn, conversationId: id });
        return sendJson(response, 200, { status: 'success', body, conversationId: id });
      }
    }
    response.writeHead(404, { 'content-type': 'text/html; charset=utf-8' }).end(FLASK_404);
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent)
        response.writeHead(500, { 'content-type': 'text/html' }).end(`<h1>Internal Server Error</h1>${String(error)}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    protocols,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** One task as the Python SDK's sender runs it: every request it made, and the replies it got. */
export type PythonTask = { requests: { method: string; url: string; json?: unknown }[]; replies: any[] };

/**
 * Runs one task the way the Python sender does: base64 hash, `protocolSources` always, `multiround` only when true
 * (and always on natural language), hash/sources/multiround re-sent on follow-ups, `DELETE` after the task.
 */
export async function pythonSend(
  url: string,
  options: { protocol?: string | null; bodies: unknown[]; multiround?: boolean },
): Promise<PythonTask> {
  const base = url.replace(/\/+$/, '');
  const protocol = options.protocol ?? null;
  const multiround = protocol === null ? true : options.multiround === true;
  const fields = {
    protocolHash: protocol === null ? null : pythonHash(protocol),
    protocolSources: protocol === null ? [] : [pythonDataUri(protocol)],
    ...(multiround ? { multiround: true } : {}),
  };
  const task: PythonTask = { requests: [], replies: [] };
  const call = async (method: string, target: string, json?: unknown) => {
    task.requests.push({ method, url: target, ...(json !== undefined ? { json } : {}) });
    const response = await fetch(target, {
      method,
      ...(json !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(json) } : {}),
    });
    return (await response.json()) as any;
  };
  let conversationId: string | undefined;
  for (const [index, body] of options.bodies.entries()) {
    const target = index === 0 || conversationId === undefined ? `${base}/` : `${base}/conversations/${conversationId}`;
    const reply = await call('POST', target, { ...fields, body });
    task.replies.push(reply);
    if (typeof reply.conversationId === 'string') conversationId = reply.conversationId;
    if (reply.status !== 'success') break;
  }
  if (conversationId !== undefined) task.replies.push(await call('DELETE', `${base}/conversations/${conversationId}`));
  return task;
}
