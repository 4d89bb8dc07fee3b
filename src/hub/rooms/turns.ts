// The rules of a room's turns: who speaks next and why, when a room ends, and what a turn writes into the record.
import { mentionIn, type TurnReply } from './document.js';
import type { TurnOutcome } from './ask.js';
import type { Participant, RoomRecord } from './records.js';

/** A failed or timed-out turn in a row this many times drops the participant. */
export const MAX_FAILURES = 3;

const active = (room: RoomRecord): Participant[] => room.participants.filter((participant) => !participant.dropped);

/** The next active participant after `speaker` in the room's order (skipping the lead in moderated rooms). */
function following(room: RoomRecord, speaker: string | undefined, skipLead: boolean): string | undefined {
  const order = room.participants.filter(
    (participant) => !participant.dropped && !(skipLead && participant.name === room.lead),
  );
  if (order.length === 0) return undefined;
  const names = room.participants.map((participant) => participant.name);
  const at = speaker === undefined ? -1 : names.indexOf(speaker);
  for (let step = 1; step <= names.length; step++) {
    const candidate = names[(at + step) % names.length]!;
    if (order.some((participant) => participant.name === candidate)) return candidate;
  }
  return order[0]!.name;
}

/** Who opens a room. */
export function firstTurn(room: RoomRecord): { speaker: string; why: string } {
  if (room.pattern === 'moderated')
    return { speaker: room.lead!, why: 'you moderate: open the discussion and pick who speaks next' };
  return { speaker: room.participants[0]!.name, why: 'your turn: open the discussion' };
}

/** Who speaks after `speaker` (who answered `reply`, or failed when it is undefined). */
export function nextTurn(
  room: RoomRecord,
  speaker: string,
  reply: TurnReply | undefined,
): { speaker: string; why: string } | undefined {
  const names = active(room).map((participant) => participant.name);
  if (room.pattern === 'moderated') {
    const lastOther = [...room.transcript]
      .reverse()
      .find((entry) => entry.speaker !== room.lead && entry.kind !== 'person')?.speaker;
    if (speaker !== room.lead)
      return names.includes(room.lead!)
        ? { speaker: room.lead!, why: 'you moderate: pick who speaks next' }
        : undefined;
    const picked =
      reply?.next !== undefined && reply.next !== room.lead && names.includes(reply.next)
        ? reply.next
        : following(room, lastOther, true);
    return picked === undefined ? undefined : { speaker: picked, why: `your turn: ${room.lead} gave you the floor` };
  }
  if (room.pattern === 'free-form' && reply !== undefined) {
    const picked =
      reply.next !== undefined && reply.next !== speaker && names.includes(reply.next)
        ? reply.next
        : mentionIn(reply.message, names, speaker);
    if (picked !== undefined) return { speaker: picked, why: `your turn: ${speaker} asked you` };
  }
  const next = following(room, speaker, false);
  return next === undefined ? undefined : { speaker: next, why: 'your turn' };
}

/**
 * Why a room ends before its next turn, if it does; `synthesis` when a moderated room's lead should sum it up first.
 */
export function endOf(room: RoomRecord): { reason: string; synthesis: boolean } | undefined {
  const left = active(room);
  if (room.pattern === 'moderated' && !left.some((participant) => participant.name === room.lead))
    return { reason: 'the lead was dropped', synthesis: false };
  if (left.length < (room.pattern === 'moderated' ? 2 : 1)) return { reason: 'no participants left', synthesis: false };
  if (room.budget !== undefined && room.tokens >= room.budget.tokens)
    return { reason: `the budget of ${room.budget.tokens} tokens was spent`, synthesis: false };
  const synthesis = room.pattern === 'moderated';
  if (room.pattern === 'moderated' && room.done.includes(room.lead!))
    return { reason: 'the lead closed the discussion', synthesis };
  if (room.pattern !== 'moderated' && left.every((participant) => room.done.includes(participant.name)))
    return { reason: 'every participant is done', synthesis: false };
  // A moderated room keeps its last turn for the synthesis.
  if (room.turns >= room.maxTurns - (synthesis ? 1 : 0)) return { reason: `${room.maxTurns} turns taken`, synthesis };
  return undefined;
}

/**
 * A turn's outcome written into the room's record: the transcript entry, the participant's failures (dropped after
 * {@link MAX_FAILURES}), who is done, the next turn, and the end after a synthesis. Returns the participant.
 */
export function applyTurn(
  room: RoomRecord,
  speaker: string,
  synthesis: boolean,
  outcome: TurnOutcome,
  at: number,
): Participant {
  const participant = room.participants.find((candidate) => candidate.name === speaker)!;
  room.turns += 1;
  if ('error' in outcome) {
    participant.failures += 1;
    if (participant.failures >= MAX_FAILURES) participant.dropped = true;
    room.transcript.push({ turn: room.turns, speaker, kind: 'skipped', text: outcome.error, tokens: 0, at });
  } else {
    participant.failures = 0;
    room.tokens += outcome.tokens;
    if (outcome.reply.done && !room.done.includes(speaker)) room.done.push(speaker);
    room.transcript.push({
      turn: room.turns,
      speaker,
      kind: synthesis ? 'synthesis' : 'agent',
      text: outcome.reply.message,
      tokens: outcome.tokens,
      at,
    });
  }
  const next = nextTurn(room, speaker, 'error' in outcome ? undefined : outcome.reply);
  if (next) room.next = next;
  else delete room.next;
  if (synthesis) {
    room.state = 'completed';
    room.endedBecause = endOf(room)?.reason ?? 'the lead wrote the synthesis';
  }
  return participant;
}
