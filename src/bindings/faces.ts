// The faces: other protocols' endpoints (ROAR, OAP, A2A, MCP) over one Agora receiver, each a `Face` (a mount)
// composed behind the edge's one guard after the Agora mount. The faces, the names the CLI's `--faces` takes, and the
// options `FacesConfig` holds all come from `BINDINGS`; the face kit they share is `src/faces/`.
import type { BearerVerifier } from '../edge/oauth.js';
import { consoleLogger, type Logger } from '../log.js';
import { InMemoryMemory, type AgentMemory } from '../memory/file.js';
import type { ReceiverApi } from '../receiver.js';
import { DEFAULT_MAX_BODY_BYTES } from '../edge/mount.js';
import { Catalogue } from '../faces/catalogue.js';
import type { Face, FaceContext, FaceDefinition } from '../faces/face.js';
import { BINDINGS, FACE_NAMES, type FaceName } from './index.js';
import { a2aFace } from './a2a/face.js';
import { mcpFace } from './mcp/face.js';
import { oapFace } from './oap/face.js';
import { roarFace } from './roar/face.js';

export { a2aFace, mcpFace, oapFace, roarFace };

type Listed = (typeof BINDINGS)[number]['face'];

type OptionsOf<Definition> = Definition extends FaceDefinition<infer Options, string> ? Options : never;
type Intersection<Union> = (Union extends unknown ? (value: Union) => void : never) extends (value: infer Both) => void
  ? Both
  : never;

/** The options of every face of `BINDINGS` together (`roarSecret`, `version`, `stream`…). */
export type FaceOptions = Intersection<OptionsOf<Listed>>;

/** What an agent's `faces` option sets; tokens, rate limit, body cap and cross-site rule are the edge's. */
export type FacesConfig = FaceOptions & {
  /** Which faces answer (default all); `agora` is the Agora wire, served apart. */
  faces?: readonly FaceName[];
  /** The agent's name (ROAR display name, OAP agent_id, A2A card name); default the receiver's. */
  name?: string;
  description?: string;
  /** Where state that must outlive the process is kept (the ROAR identity); default the receiver's memory. */
  memory?: AgentMemory;
};

/** Options of {@link createFaces}: the faces' config, plus what the edge they are composed on decides. */
export type FacesOptions = FacesConfig & {
  name: string;
  memory: AgentMemory;
  /** Whether the edge asks for a bearer token (the cards say so); the edge checks it. */
  tokensRequired?: boolean;
  /** The edge's OAuth access-token verifier, when it takes them (the cards describe it). */
  oauth?: BearerVerifier | undefined;
  publicUrl?: string;
  /** Largest request body, as the edge's (default 1 MiB). */
  maxBodyBytes?: number;
  logger?: Pick<Logger, 'warn' | 'error'> & Partial<Logger>;
  /** Clock in Unix milliseconds. */
  now?: () => number;
};

/** What the edge shares with its faces. */
export type SharedEdge = {
  maxBodyBytes: number;
  tokensRequired: boolean;
  oauth?: BearerVerifier | undefined;
  publicUrl?: string;
  logger?: Pick<Logger, 'warn' | 'error'> & Partial<Logger>;
  now?: () => number;
};

/**
 * The faces of a receiver as mounts, to compose after the Agora mount (under Express too: `edgeMiddleware`).
 * @example const edge = compose([agoraMount(receiver), ...createFaces(receiver, { name: 'weather', memory })]);
 */
export function createFaces(receiver: ReceiverApi, options: FacesOptions): Face[] {
  const enabled: readonly FaceName[] = options.faces ?? FACE_NAMES;
  const context: FaceContext = {
    receiver,
    // One catalogue for every face: each derives its own view (card, skills, capabilities, tools) from it.
    catalogue: new Catalogue(receiver),
    name: options.name,
    description: options.description ?? '',
    memory: options.memory,
    tokensRequired: options.tokensRequired ?? false,
    ...(options.oauth !== undefined ? { oauth: options.oauth } : {}),
    ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl.replace(/\/+$/, '') } : {}),
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    logger: options.logger ? { info() {}, ...options.logger } : consoleLogger(),
    now: options.now ?? Date.now,
  };
  return BINDINGS.filter((binding) => enabled.includes(binding.name)).map((binding) =>
    (binding.face as FaceDefinition<FacesOptions, string>).create(context, options),
  );
}

/** Whether the Agora endpoints themselves are served under this configuration (`faces` lists `agora`, or is unset). */
export function agoraEnabled(config: FacesConfig | false | undefined): boolean {
  return config === false || config?.faces === undefined || config.faces.includes('agora');
}

/**
 * Parses a face list (`agora,roar,oap,a2a`, the `--faces` flag and `AGORA_FACES`); an unknown name is an error.
 * @example parseFaceList('agora,a2a') // ['agora', 'a2a']
 */
export function parseFaceList(text: string): FaceName[] {
  const names = text
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  for (const name of names) {
    if (!(FACE_NAMES as readonly string[]).includes(name))
      throw new Error(`faces: unknown face ${JSON.stringify(name)} (known: ${FACE_NAMES.join(', ')})`);
  }
  return [...new Set(names)] as FaceName[];
}

type NamedReceiver = ReceiverApi & { name?: unknown; memory?: unknown; profile?: () => { description?: string } };

/**
 * The faces of a receiver for an agent's edge; none when `config` is `false` or lists only `agora`. The name,
 * description and memory default to the receiver's own (a `Receiver` has them), so its ROAR identity is kept with
 * what it has learned.
 * @example const edge = compose([agoraMount(receiver), ...facesFor(receiver, options.faces, { maxBodyBytes, tokensRequired: tokens.length > 0 })], { tokens });
 */
export function facesFor(receiver: ReceiverApi, config: FacesConfig | false | undefined, shared: SharedEdge): Face[] {
  if (config === false) return [];
  const faces = (config?.faces ?? FACE_NAMES).filter((name) => name !== 'agora');
  if (faces.length === 0) return [];
  const named = receiver as NamedReceiver;
  const description =
    config?.description ?? (typeof named.profile === 'function' ? named.profile().description : undefined);
  return createFaces(receiver, {
    ...config,
    faces,
    name: config?.name ?? (typeof named.name === 'string' ? named.name : 'agent'),
    memory: config?.memory ?? (isMemory(named.memory) ? named.memory : new InMemoryMemory()),
    ...(description !== undefined ? { description } : {}),
    tokensRequired: shared.tokensRequired,
    oauth: shared.oauth,
    maxBodyBytes: shared.maxBodyBytes,
    ...(shared.publicUrl !== undefined ? { publicUrl: shared.publicUrl } : {}),
    ...(shared.logger ? { logger: shared.logger } : {}),
    ...(shared.now ? { now: shared.now } : {}),
  });
}

function isMemory(value: unknown): value is AgentMemory {
  return typeof value === 'object' && value !== null && typeof (value as { get?: unknown }).get === 'function';
}
