// What a face is: a mount that speaks another protocol (ROAR, OAP, A2A…) over the same receiver. A face is the
// `FaceDefinition` of one binding (`src/bindings/<name>/`), listed once in `BINDINGS`.
import type { Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import type { ReceiverApi } from '../receiver.js';
import type { Mount } from '../edge/mount.js';
import type { BearerVerifier } from '../edge/oauth.js';
import type { Catalogue } from './catalogue.js';

/** A face: a mount with a face's name. Its routes, public routes and error shape are declared to the edge. */
export interface Face extends Mount {
  readonly name: string;
}

/** What every face is made from: the receiver and what the agent shares with all of its faces. */
export type FaceContext = {
  receiver: ReceiverApi;
  /** What the agent serves, read once for all of its faces. */
  catalogue: Catalogue;
  /** The agent's name (ROAR display name, OAP agent_id, A2A card name) and description. */
  name: string;
  description: string;
  /** Where state that must outlive the process is kept (the ROAR identity). */
  memory: AgentMemory;
  /** Whether the edge asks for a token (cards say so). */
  tokensRequired: boolean;
  /** The edge's OAuth access-token verifier, when it takes them (cards describe the scheme). */
  oauth?: BearerVerifier;
  publicUrl?: string;
  maxBodyBytes: number;
  logger: Logger;
  /** Clock in Unix milliseconds. */
  now: () => number;
};

/**
 * A face as the list of faces holds it: its name and how it is made from the agent's context and the face's own
 * options (which the faces' config, `FacesConfig`, gathers from every face in the list).
 */
export type FaceDefinition<Options = unknown, Name extends string = string> = {
  readonly name: Name;
  create(context: FaceContext, options: Options): Face;
};
