// The OAP face (Open Agent Protocol 0.3, PyPI `open-agent-protocol`): `GET /` is what `oap register` reads,
// `POST /invoke` takes a TaskEnvelope. Errors are OAP's `{error, detail}`. `POST /` stays the Agora wire's.
import { cardAuth } from '../../edge/bearer.js';
import type { MountRoute } from '../../edge/mount.js';
import { json, type EdgeResponse } from '../../edge/response.js';
import { errorCodeOf } from '../../faces/body.js';
import { capabilityWords } from '../../faces/catalogue.js';
import type { Face, FaceDefinition } from '../../faces/face.js';
import { invoke } from './invoke.js';

/** OAP takes no options of its own. */
export type OapOptions = Record<never, never>;

const READ_ALLOW = 'GET, HEAD, OPTIONS';

/** OAP's routes: its registration card is a public read; `/invoke` needs the token when tokens are set. */
export const OAP_ROUTES: readonly MountRoute[] = [
  // GET and HEAD only: the Agora mount, composed first, takes `POST /`.
  { path: '/', name: 'card', methods: ['GET', 'HEAD'], public: 'read', allow: READ_ALLOW },
  { path: '/invoke', name: 'invoke', allow: 'POST, OPTIONS' },
];

/** A failure in OAP's error shape `{"error": code, "detail": text}`. */
export function oapFailure(status: number, message: string, code = errorCodeOf(status)): EdgeResponse {
  return json(status, { error: code, detail: message });
}

/** The OAP face. */
export const oapFace: FaceDefinition<OapOptions, 'oap'> = {
  name: 'oap',
  create(context): Face {
    const deps = {
      receiver: context.receiver,
      name: context.name,
      maxBodyBytes: context.maxBodyBytes,
      logger: context.logger,
      now: context.now,
      failure: (status: number, code: string, detail: string) => oapFailure(status, detail, code),
      json,
    };
    return {
      name: 'oap',
      routes: OAP_ROUTES,
      async handle(request) {
        if (request.route?.name === 'invoke') return invoke(deps, request);
        // Alone (without the Agora mount), `/` takes every method: only reads are OAP's.
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          const refusal = oapFailure(405, 'GET the agent card at /');
          refusal.headers.allow = READ_ALLOW;
          return refusal;
        }
        const protocols = await context.catalogue.entries();
        const card = json(200, {
          agent_id: context.name,
          capabilities: capabilityWords(protocols),
          description: context.description,
          status: 'ok',
          ...(context.tokensRequired ? { auth: cardAuth(await context.oauth?.describe()) } : {}),
        });
        if (request.method === 'HEAD') card.body = '';
        return card;
      },
      failure: oapFailure,
    };
  },
};
