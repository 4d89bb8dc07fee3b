// The one list of bindings: every foreign protocol an agent speaks, both directions. The faces (`FACES`, `--faces`),
// the peer kinds (`askPeer`, `agora send --as`, the hub's kinds) and the order agents are recognised in all come
// from it. A new protocol is one folder under `src/bindings/` and one line here.
import type { Probe } from './binding.js';
import { a2a } from './a2a/index.js';
import { mcp } from './mcp/index.js';
import { oap } from './oap/index.js';
import { roar } from './roar/index.js';

/** Every binding, its face composed in this order after the Agora mount. */
export const BINDINGS = [roar, oap, a2a, mcp] as const;

type Listed = (typeof BINDINGS)[number];

/** Every face an agent can show, in the order of `BINDINGS`. */
export const FACES = BINDINGS.map((binding) => binding.face);

/** One face's name; `agora` is the Agora wire itself (served by the Agora mount, not a face). */
export type FaceName = 'agora' | Listed['name'];

/** The names `--faces` and `AGORA_FACES` take, `agora` first. */
export const FACE_NAMES: readonly FaceName[] = ['agora', ...BINDINGS.map((binding) => binding.name)];

/** The bindings with a peer client: the protocols we ask agents in, beside Agora's. */
type WithPeer = Extract<Listed, { peer: unknown }>;

/** The protocols {@link askPeer} speaks (Agora has the `Sender`). */
export type ForeignKind = WithPeer['name'];

/** The protocols an agent may speak to us: Agora, and every binding with a peer client. */
export type PeerKind = 'agora' | ForeignKind;

/** The binding of each foreign kind. */
export const PEERS: ReadonlyMap<ForeignKind, WithPeer> = new Map(
  BINDINGS.filter((binding): binding is WithPeer => 'peer' in binding).map((binding) => [binding.name, binding]),
);

/** The kinds `agora send --as` takes and the hub records, `agora` first. */
export const PEER_KINDS = ['agora', ...PEERS.keys()] as [PeerKind, ...PeerKind[]];

/** Every binding's probes with its kind, in the order they are tried (after Agora's `/wellknown`). */
export const PROBES: readonly (Probe & { kind: ForeignKind })[] = [...PEERS.values()]
  .flatMap((binding) => binding.probes.map((probe) => ({ ...probe, kind: binding.name })))
  .sort((one, other) => one.order - other.order);
