// Rooms: several agents in one structured discussion on the hub, taking turns. What a room is, as stored.
import { z } from 'zod';

/** Largest message text kept in a transcript (a reply or a person's message). */
export const MAX_MESSAGE_CHARS = 8 * 1024;
/** Characters of transcript a room keeps; the oldest entries make room. */
export const MAX_TRANSCRIPT_CHARS = 256 * 1024;

/** The body of `POST /rooms`. */
export const roomRequestSchema = z
  .object({
    topic: z.string().trim().min(1).max(2000),
    participants: z.array(z.string().trim().min(1).max(2000)).min(2).max(12),
    pattern: z.enum(['round-robin', 'moderated', 'free-form']).default('round-robin'),
    lead: z.string().trim().min(1).max(2000).optional(),
    maxTurns: z.number().int().min(1).max(200).default(12),
    turnTimeoutMs: z.number().int().min(100).max(120_000).default(30_000),
    budget: z
      .object({ tokens: z.number().int().min(1) })
      .strict()
      .optional(),
  })
  .strict()
  .refine(
    (room) => room.pattern !== 'moderated' || (room.lead !== undefined && room.participants.includes(room.lead)),
    {
      message: 'a moderated room needs a lead, one of its participants',
      path: ['lead'],
    },
  );

/** A room as asked for. */
export type RoomRequest = z.infer<typeof roomRequestSchema>;

/** Room states: running, stopped by a person for now, ended by its rules, ended by a person. */
export type RoomState = 'active' | 'paused' | 'completed' | 'cancelled';

/**
 * One participant: its name in the room, where it answers, how (`kind`: absent for Agora, else the protocol of the
 * registered ROAR, A2A or OAP agent), its conversation, its run of failed turns.
 */
export type Participant = {
  name: string;
  url: string;
  kind?: 'roar' | 'a2a' | 'oap';
  conversationId?: string;
  failures: number;
  dropped?: boolean;
};

/** One line of the transcript: an agent's message, a person's, or a turn lost to a failure or a timeout. */
export type TranscriptEntry = {
  turn: number;
  speaker: string;
  kind: 'agent' | 'person' | 'skipped' | 'synthesis';
  text: string;
  tokens: number;
  at: number;
};

/** A room as stored; the runner saves it after every turn (its checkpoint). */
export type RoomRecord = {
  id: string;
  topic: string;
  pattern: RoomRequest['pattern'];
  lead?: string;
  maxTurns: number;
  turnTimeoutMs: number;
  budget?: { tokens: number };
  state: RoomState;
  endedBecause?: string;
  /** Turns taken so far (a skipped turn counts). */
  turns: number;
  /** Who speaks next, and why. */
  next?: { speaker: string; why: string };
  participants: Participant[];
  transcript: TranscriptEntry[];
  /** Entries dropped from the front of the transcript to stay under its cap. */
  trimmed: number;
  tokens: number;
  /** Participants that said they are done (free-form and round-robin end when all active ones have). */
  done: string[];
  createdAt: number;
  updatedAt: number;
};

/** One event of a room, as watchers get it; ids increase within a room and never repeat. */
export type RoomEvent = {
  id: number;
  type: 'turn_notification' | 'new_message' | 'flow_completed' | 'state';
  data: Record<string, unknown>;
};

/**
 * The ARP frame of a room event (the WebSocket's and SSE's shape); fields ARP does not name ride along, so it reads
 * back whole.
 */
export function arpFrame(roomId: string, event: RoomEvent): Record<string, unknown> {
  const { speaker, text, why, ...rest } = event.data;
  if (event.type === 'new_message')
    return {
      type: 'new_message',
      flowId: roomId,
      eventId: event.id,
      message: { agentName: speaker, content: text, ...rest },
    };
  if (event.type === 'turn_notification')
    return { type: 'turn_notification', flowId: roomId, eventId: event.id, agentName: speaker, reason: why, ...rest };
  if (event.type === 'flow_completed')
    return { type: 'flow_completed', flowId: roomId, eventId: event.id, ...event.data };
  return { type: 'flow_state', flowId: roomId, eventId: event.id, ...event.data };
}

/**
 * The room event an ARP frame of {@link arpFrame} stands for (`undefined` for `hello`, heartbeats and unknown frames).
 */
export function roomEventOfFrame(frame: Record<string, unknown>): RoomEvent | undefined {
  const { type, flowId: _flow, eventId: id, ...data } = frame;
  if (typeof id !== 'number') return undefined;
  if (type === 'new_message' && typeof data.message === 'object' && data.message !== null) {
    const { agentName, content, ...rest } = data.message as Record<string, unknown>;
    return { id, type, data: { speaker: agentName, text: content, ...rest } };
  }
  if (type === 'turn_notification') {
    const { agentName, reason, ...rest } = data;
    return { id, type, data: { speaker: agentName, why: reason, ...rest } };
  }
  if (type === 'flow_completed') return { id, type, data };
  if (type === 'flow_state') return { id, type: 'state', data };
  return undefined;
}

/** Keeps a transcript under its cap, dropping the oldest entries. */
export function trimTranscript(record: RoomRecord): void {
  let chars = 0;
  for (const entry of record.transcript) chars += entry.text.length;
  while (chars > MAX_TRANSCRIPT_CHARS && record.transcript.length > 1) {
    chars -= record.transcript.shift()!.text.length;
    record.trimmed += 1;
  }
}
