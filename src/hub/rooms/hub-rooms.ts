// Rooms as a hub serves them: participants found in its directory (or given as URLs), the room document in its
// catalogue, and the routes on its HTTP server.
import { slug } from '../../_slug.js';
import { consoleLogger } from '../../log.js';
import { hashText } from '../../protocol/document.js';
import { guardedFetch } from '../../net/guard.js';
import { Sender } from '../../sender/sender.js';
import type { Hub } from '../hub.js';
import { normalizeAgentUrl, vetAgentUrl } from '../read-agent.js';
import { ROOM_DOCUMENT } from './document.js';
import { turnReplyBytes } from './ask.js';
import { Rooms, type RoomsOptions } from './rooms.js';

/** A participant's name in a room: its directory name (or its URL's host), as `@name` can mention it. */
function roomName(text: string): string {
  return slug(text, { maxLength: 40, fallback: 'agent' });
}

/**
 * Rooms on a hub: participants are its registered agents (by name or id) or URLs vetted like a registration (the
 * same address rule, `--allow-private-agents` to lift it); turns go out on connections pinned to vetted addresses.
 */
export async function roomsForHub(hub: Hub, options: Omit<RoomsOptions, 'resolve'> = {}): Promise<Rooms> {
  await hub.publish(hashText(ROOM_DOCUMENT), ROOM_DOCUMENT);
  const allowPrivate = hub.allowsPrivateAgents;
  const fetch = guardedFetch({ allowPrivateAddresses: allowPrivate });
  const sender =
    options.sender ??
    new Sender({
      llm: null,
      hub: null,
      logger: options.logger ?? consoleLogger('agora-hub'),
      fetch,
      maxReplyBytes: turnReplyBytes(options.maxReplyBytes),
      // The hub's own credentials: each participant gets a token for its origin, and only it.
      ...(hub.tokenSource ? { tokenSource: hub.tokenSource } : {}),
    });
  const rooms = new Rooms({
    ...options,
    sender,
    peerFetch: options.peerFetch ?? fetch,
    ...(hub.tokenSource && !options.peerTokenSource ? { peerTokenSource: hub.tokenSource } : {}),
    async resolve(target) {
      const known = await hub.agent(target);
      // A registered ROAR, A2A or OAP agent takes its turns in its own protocol.
      if (known)
        return { name: roomName(known.name), url: known.url, ...(known.kind !== 'agora' ? { kind: known.kind } : {}) };
      if (!/^https?:\/\//i.test(target)) throw new Error('not a registered agent (name or id) nor a URL');
      const url = normalizeAgentUrl(target);
      await vetAgentUrl(url, { allowPrivateSources: allowPrivate });
      return { name: roomName(new URL(url).host), url };
    },
  });
  await rooms.resumeOpen();
  return rooms;
}
