// `npm run example:room`: three agents and a person discuss a change in a moderated room on a hub, printed live.
// The agents answer their turns with routines (no LLM, no key, offline); the hub asks each turn as an Agora query
// under its room document. The example checks its own result and exits non-zero if the room went wrong.
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startAgent, type RunningAgent } from 'agora-agents';
import { HubClient, ROOM_DOCUMENT, startHub } from 'agora-agents/hub';
import { quietLogger, temporaryCopy } from '../_shared.js';

// Each part is a routine on the room document: the architect leads, gives the floor, and writes the synthesis.
const ROUTINES: Record<string, string> = {
  architect: `export default function turn(body) {
  if (body.why.startsWith('synthesis')) {
    const said = body.transcript.filter((line) => line.kind === 'agent' && line.speaker !== body.you).map((line) => line.speaker + ': ' + line.text);
    return { message: 'Synthesis: ' + said.length + ' points heard. Ship the parser change behind a flag; ' + (body.transcript.some((line) => line.kind === 'person') ? 'as asked, the public API stays as it is.' : 'keep the API.') };
  }
  const others = body.participants.filter((name) => name !== body.you);
  const next = others[(body.turn / 2) % others.length | 0];
  return { message: body.turn === 1 ? 'We replace the hand-written parser with a generated one. @' + next + ', your view?' : 'Noted. @' + next + ', anything to add?', next: '@' + next };
}`,
  reviewer: `export default function turn(body) {
  const person = body.transcript.find((line) => line.kind === 'person');
  return { message: person ? 'Agreed with ' + person.speaker + ': no API change; I will review the flag.' : 'The generated parser must keep error positions; I want tests for that.' };
}`,
  tester: `export default function turn(body) {
  return { message: 'I will run the old and new parsers side by side on the 2,000 fixtures.', done: true };
}`,
};

const work = await temporaryCopy('agora-room-');
const agents: RunningAgent[] = [];
const hub = await startHub({ port: 0, host: '127.0.0.1', tickMs: 0, allowPrivateAgents: true, logger: quietLogger });
try {
  for (const [name, routine] of Object.entries(ROUTINES)) {
    const dir = join(work.dir, name);
    await mkdir(join(dir, 'protocols'), { recursive: true });
    await mkdir(join(dir, 'routines'), { recursive: true });
    await writeFile(join(dir, 'protocols', 'room.md'), ROOM_DOCUMENT);
    await writeFile(join(dir, 'routines', 'room.ts'), routine);
    const agent = await startAgent({
      dir,
      port: 0,
      host: '127.0.0.1',
      llm: null,
      watch: false,
      logger: quietLogger,
      dashboard: false,
    });
    agents.push(agent);
    await hub.hub.register({ url: agent.url, name });
  }
  // The hub's client: rooms created, watched live (the hub's frames read back as room events) and spoken in.
  const client = new HubClient({ url: hub.url });
  const room = await client.createRoom({
    topic: 'Replace the parser with a generated one',
    participants: Object.keys(ROUTINES),
    pattern: 'moderated',
    lead: 'architect',
    maxTurns: 8,
  });
  console.log(`room ${room.id}: "${room.topic}", moderated by architect\n`);

  // The person speaks once the discussion has started; everyone after sees it.
  let spoke = false;
  for await (const event of client.watch(room.id)) {
    if (event.type === 'turn_notification')
      console.log(`  turn ${String(event.data.turn)} → ${String(event.data.speaker)}`);
    if (event.type === 'new_message')
      console.log(`${String(event.data.speaker).padStart(10)}: ${String(event.data.text)}`);
    if (event.type === 'flow_completed') {
      console.log(`\nroom ended: ${String(event.data.reason)}`);
      break;
    }
    if (event.type === 'new_message' && !spoke) {
      spoke = true;
      await client.say(room.id, 'Please keep the public API as it is.', 'ana');
    }
  }

  const final = await client.room(room.id);
  assert.equal(final.state, 'completed');
  assert.equal(final.transcript.at(-1)?.kind, 'synthesis', 'the lead writes the synthesis');
  assert.match(final.transcript.at(-1)!.text, /public API stays as it is/, "the synthesis heard the person's message");
  assert.ok(
    final.transcript.some((line) => line.speaker === 'reviewer' && line.text.startsWith('Agreed with ana')),
    'a later turn saw the message',
  );
  const speakers = final.transcript.filter((line) => line.kind === 'agent').map((line) => line.speaker);
  assert.ok(
    speakers.every(
      (speaker, index) => index === 0 || (speaker === 'architect') !== (speakers[index - 1] === 'architect'),
    ),
    'the lead speaks between speakers',
  );
  console.log(
    `\nchecked: ${final.turns} turns, the lead between speakers, the person heard, the synthesis last (${final.tokens} tokens)`,
  );
} finally {
  await hub.close();
  for (const agent of agents) await agent.close();
  await work.remove();
}
