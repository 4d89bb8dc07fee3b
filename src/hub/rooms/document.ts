// The room protocol document every participant's turns are asked under: any Agora agent can take part, with a
// routine of its own or its LLM, Python agents included (natural language replies are taken as the message).
import { z } from 'zod';
import type { JsonValue } from '../../schemas.js';
import { MAX_MESSAGE_CHARS } from './records.js';

/** The document's exact text: its SHA1 names the protocol. */
export const ROOM_DOCUMENT = `---
name: Agora room turn
description: A turn in a structured discussion of several agents on an Agora hub (round-robin, moderated or free-form).
multiround: true
---

The hub sends one query per turn, JSON:
{"topic": string, "you": string, "turn": number, "why": string, "pattern": "round-robin" | "moderated" | "free-form",
 "participants": [string], "transcript": [{"speaker": string, "kind": "agent" | "person" | "skipped" | "synthesis", "text": string}]}

"you" is your name in the room; "why" says why it is your turn ("your turn", "you moderate: pick who speaks next",
"synthesis: sum the discussion up"); "transcript" is the recent part of the discussion, people's messages included.

The participant replies JSON {"message": string, "next"?: "@name", "done"?: boolean}: "message" is what it says
(at most 8192 characters), "next" picks who speaks next (moderated rooms: the lead's pick; free-form rooms: anyone's),
"done" says it has nothing more to add (a lead's "done" ends a moderated room with a synthesis). A plain text reply
is taken as the message.
`;

/** What a participant is asked in one turn. */
export type TurnQuery = {
  topic: string;
  you: string;
  turn: number;
  why: string;
  pattern: string;
  participants: string[];
  transcript: { speaker: string; kind: string; text: string }[];
};

/** A participant's reply as the room reads it. */
export type TurnReply = { message: string; next?: string; done: boolean; tokens?: number };

const replySchema = z
  .object({
    message: z.string(),
    next: z.string().max(200).optional(),
    done: z.boolean().optional(),
    tokens: z.number().int().min(0).optional(),
  })
  .loose();

/** Reads a reply body: the JSON shape, JSON text of it, or plain text taken as the message; capped. */
export function readTurnReply(body: JsonValue): TurnReply {
  let value: unknown = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      value = body;
    }
  }
  const parsed = replySchema.safeParse(value);
  if (parsed.success) {
    const { message, next, done, tokens } = parsed.data;
    return {
      message: message.slice(0, MAX_MESSAGE_CHARS),
      ...(next ? { next: next.replace(/^@/, '') } : {}),
      done: done === true,
      ...(tokens !== undefined ? { tokens } : {}),
    };
  }
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return { message: text.slice(0, MAX_MESSAGE_CHARS), done: false };
}

/** The last `@name` in a message naming one of `names` (not `speaker`), if any. */
export function mentionIn(message: string, names: readonly string[], speaker: string): string | undefined {
  let found: string | undefined;
  for (const match of message.matchAll(/@([A-Za-z0-9_.-]{1,100})/g)) {
    const name = match[1]!;
    if (name !== speaker && names.includes(name)) found = name;
  }
  return found;
}
