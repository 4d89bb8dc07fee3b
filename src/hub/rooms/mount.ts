// Rooms as a hub serves them: participants found in its directory (or given as URLs), the room document in its
// catalogue, and the routes on its HTTP server.
import { slug } from '../../_slug.js';
import { hashText } from '../../protocol/document.js';
import type { Hub } from '../hub.js';
import { ROOM_DOCUMENT } from './document.js';
import { Rooms, type RoomsOptions } from './rooms.js';

/** A participant's name in a room: its directory name (or its URL's host), as `@name` can mention it. */
function roomName(text: string): string {
  return slug(text, { maxLength: 40, fallback: 'agent' });
}

/** Rooms on a hub: participants resolved against its directory; the room document published in its catalogue. */
export async function roomsForHub(hub: Hub, options: Omit<RoomsOptions, 'resolve'> = {}): Promise<Rooms> {
  await hub.catalogue.publish(hashText(ROOM_DOCUMENT), ROOM_DOCUMENT);
  const rooms = new Rooms({
    ...options,
    async resolve(target) {
      const agents = await hub.agents({ includeDown: true, limit: 1000 });
      const known = agents.find((agent) => agent.name === target || agent.id === target || agent.url === target.replace(/\/+$/, ''));
      if (known) return { name: roomName(known.name), url: known.url };
      if (!/^https?:\/\//i.test(target)) throw new Error('not a registered agent (name or id) nor a URL');
      return { name: roomName(new URL(target).host), url: target };
    },
  });
  await rooms.resumeOpen();
  return rooms;
}
