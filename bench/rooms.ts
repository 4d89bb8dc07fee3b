// `npx tsx bench/rooms.ts` (also a section of `npm run bench`): (1) a room's turns per second against direct Agora
// queries per second to the same routine-backed agents, both one at a time as a room takes its turns (target
// ≥ 0.5×: the hub adds one hop, not a bottleneck); (2) live fan-out of a room's messages to 100 SSE watchers:
// delivery time from the turn's record to each watcher, p50 and p99. In one process, on loopback.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startAgent, type RunningAgent } from '../src/agent.js';
import { ROOM_DOCUMENT } from '../src/hub/rooms/document.js';
import { roomEventOfFrame, type RoomRecord } from '../src/hub/rooms/records.js';
import { startHub } from '../src/hub/server.js';
import { silentLogger } from '../src/log.js';
import { Sender } from '../src/sender/sender.js';
import { formatNumber, table } from './_harness.js';

const ROUTINE = `export default function turn(body) { return { message: body.you + ' at turn ' + body.turn + ' on ' + body.topic }; }\n`;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

async function watchers(url: string, id: string, count: number, delays: number[]): Promise<Promise<void>[]> {
  const done: Promise<void>[] = [];
  for (let index = 0; index < count; index++) {
    const response = await fetch(`${url}/rooms/${id}/events`);
    done.push(
      (async () => {
        let text = '';
        for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) {
          const now = Date.now();
          text += chunk;
          const blocks = text.split('\n\n');
          text = blocks.pop()!;
          for (const block of blocks) {
            // ARP's frame: the turn's record time rides in its message.
            if (block.includes('event: new_message'))
              delays.push(
                now -
                  Number(
                    roomEventOfFrame(JSON.parse(block.slice(block.indexOf('data: ') + 6)) as Record<string, unknown>)
                      ?.data.at,
                  ),
              );
            if (block.includes('event: flow_completed')) return;
          }
        }
      })(),
    );
  }
  return done;
}

/** The rooms section: a Markdown table of both figures. */
export async function benchRooms(log: (line: string) => void, seconds = 3): Promise<string> {
  const work = await mkdtemp(join(tmpdir(), 'agora-bench-rooms-'));
  const agents: RunningAgent[] = [];
  const hub = await startHub({ port: 0, tickMs: 0, allowPrivateAgents: true, logger: silentLogger });
  try {
    for (let index = 0; index < 3; index++) {
      const dir = join(work, `agent${index}`);
      await mkdir(join(dir, 'protocols'), { recursive: true });
      await mkdir(join(dir, 'routines'), { recursive: true });
      await writeFile(join(dir, 'protocols', 'room.md'), ROOM_DOCUMENT);
      await writeFile(join(dir, 'routines', 'room.ts'), ROUTINE);
      agents.push(
        await startAgent({
          dir,
          port: 0,
          host: '127.0.0.1',
          llm: null,
          watch: false,
          logger: silentLogger,
          dashboard: false,
        }),
      );
    }
    const urls = agents.map((agent) => agent.url);

    log('  direct Agora turns…');
    const sender = new Sender({ llm: null, hub: null });
    const conversations = urls.map((url) => sender.conversation(url, ROOM_DOCUMENT));
    let direct = 0;
    const transcript: { speaker: string; kind: string; text: string }[] = [];
    const directStart = performance.now();
    while (performance.now() - directStart < seconds * 1000) {
      const you = `agent${direct % 3}`;
      const reply = await conversations[direct % 3]!.send({
        topic: 'bench',
        you,
        turn: direct + 1,
        why: 'your turn',
        pattern: 'round-robin',
        participants: ['agent0', 'agent1', 'agent2'],
        transcript: transcript.slice(-20),
      });
      transcript.push({
        speaker: you,
        kind: 'agent',
        text: String((reply.body as { message?: string }).message ?? ''),
      });
      direct += 1;
    }
    const directRate = direct / ((performance.now() - directStart) / 1000);

    log('  room turns…');
    const turns = 200;
    const roomStart = performance.now();
    const bare = await hub.rooms!.create({
      topic: 'bench',
      participants: urls,
      pattern: 'round-robin',
      maxTurns: turns,
      turnTimeoutMs: 30_000,
    });
    for await (const event of hub.rooms!.watch(bare.id, 0, new AbortController().signal))
      if (event.type === 'flow_completed') break;
    const roomRate = turns / ((performance.now() - roomStart) / 1000);

    log('  fan-out to 100 watchers…');
    const created = await fetch(`${hub.url}/rooms`, {
      method: 'POST',
      body: JSON.stringify({ topic: 'bench', participants: urls, maxTurns: 60 }),
    });
    const room = (await created.json()) as RoomRecord;
    const delays: number[] = [];
    await Promise.all(await watchers(hub.url, room.id, 100, delays));
    return [
      table(
        ['measure', 'value'],
        [
          ['direct Agora turns (room document, one at a time), per second', formatNumber(directRate)],
          [
            'room turns through the hub (200 turns, round-robin over the same 3 agents), per second',
            formatNumber(roomRate),
          ],
          ['fan-out of a 60-turn room to 100 SSE watchers, delivery p50 ms', formatNumber(percentile(delays, 50), 1)],
          ['fan-out of a 60-turn room to 100 SSE watchers, delivery p99 ms', formatNumber(percentile(delays, 99), 1)],
        ],
      ),
      '',
      table(
        ['ratio', 'value', 'target'],
        [['room turns / direct turns', formatNumber(roomRate / directRate, 2), '≥ 0.50']],
      ),
    ].join('\n');
  } finally {
    await hub.close();
    for (const agent of agents) await agent.close();
    await rm(work, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`)
  process.stdout.write(`${await benchRooms((line) => process.stderr.write(`${line}\n`))}\n`);
