// The faces as the HTTP edges mount them (`startServer`, `agoraRouter`): which faces, from the edge's shared
// settings (tokens, rate limit, body cap, public URL), and a cheap test that keeps the Agora hot path free.
import type { Logger } from '../log.js';
import { InMemoryMemory, type AgentMemory } from '../memory/file.js';
import type { ReceiverApi } from '../receiver.js';
import { createFaces, FACE_NAMES, type FaceName, type Faces, type FacesOptions } from './index.js';

/** What an edge's `faces` option may set; the rest (tokens, limits, body cap, URL) comes from the edge itself. */
export type FacesConfig = Partial<Omit<FacesOptions, 'tokens' | 'rateLimit' | 'maxBodyBytes' | 'publicUrl' | 'logger' | 'now'>>;

/** The settings an edge shares with its faces. */
export type SharedEdge = {
  tokens?: string[];
  rateLimit?: (remoteAddress: string | undefined) => Promise<number>;
  maxBodyBytes: number;
  publicUrl?: string;
  logger?: Pick<Logger, 'warn' | 'error'> & Partial<Logger>;
  now?: () => number;
};

/** Whether the Agora endpoints themselves are served under this configuration (`faces` lists `agora`, or is unset). */
export function agoraEnabled(config: FacesConfig | false | undefined): boolean {
  return config === false || config?.faces === undefined || config.faces.includes('agora');
}

/**
 * Parses a face list (`agora,roar,oap,a2a`, the `--faces` flag and `AGORA_FACES`); an unknown name is an error.
 * @example parseFaceList('agora,a2a') // ['agora', 'a2a']
 */
export function parseFaceList(text: string): FaceName[] {
  const names = text.split(',').map((name) => name.trim().toLowerCase()).filter((name) => name !== '');
  for (const name of names) {
    if (!(FACE_NAMES as readonly string[]).includes(name)) throw new Error(`faces: unknown face ${JSON.stringify(name)} (known: ${FACE_NAMES.join(', ')})`);
  }
  return [...new Set(names)] as FaceName[];
}

/**
 * Whether a request may be a face's, from its first characters only: `POST /` (the Agora hot path) and the other
 * Agora routes answer false without a string search. `/` is OAP's only for GET and HEAD.
 */
export function isFacePath(method: string, path: string): boolean {
  const second = path.charCodeAt(1);
  if (second === 114 /* r */) return path.startsWith('/roar/');
  if (second === 105 /* i */) return path.startsWith('/invoke');
  if (second === 97 /* a */) return path.startsWith('/a2a');
  if (second === 46 /* . */) return path.startsWith('/.well-known/agent');
  // '/' alone, or '/?…': NaN or '?'.
  return (Number.isNaN(second) || second === 63) && (method === 'GET' || method === 'HEAD');
}

type NamedReceiver = ReceiverApi & { name?: unknown; memory?: unknown; profile?: () => { description?: string } };

/**
 * The faces of a receiver for an edge, or `undefined` when `config` is `false` or lists only `agora`. The name,
 * description and memory default to the receiver's own (a `Receiver` has them), so its ROAR identity is kept
 * with what it has learned.
 */
export function facesFor(receiver: ReceiverApi, config: FacesConfig | false | undefined, shared: SharedEdge): Faces | undefined {
  if (config === false) return undefined;
  const faces = (config?.faces ?? FACE_NAMES).filter((name) => name !== 'agora');
  if (faces.length === 0) return undefined;
  const named = receiver as NamedReceiver;
  const name = config?.name ?? (typeof named.name === 'string' ? named.name : 'agent');
  const memory = config?.memory ?? (isMemory(named.memory) ? named.memory : new InMemoryMemory());
  const description = config?.description ?? (typeof named.profile === 'function' ? named.profile().description : undefined);
  return createFaces(receiver, {
    ...config,
    faces,
    name,
    memory,
    ...(description !== undefined ? { description } : {}),
    ...(shared.tokens ? { tokens: shared.tokens } : {}),
    ...(shared.rateLimit ? { rateLimit: shared.rateLimit } : {}),
    maxBodyBytes: shared.maxBodyBytes,
    ...(shared.publicUrl !== undefined ? { publicUrl: shared.publicUrl } : {}),
    ...(shared.logger ? { logger: { info: () => {}, ...shared.logger } } : {}),
    ...(shared.now ? { now: shared.now } : {}),
  });
}

function isMemory(value: unknown): value is AgentMemory {
  return typeof value === 'object' && value !== null && typeof (value as { get?: unknown }).get === 'function';
}
