import type { RoomEvent, RoomRequest } from '../hub/rooms/records.js';
import { numberOption, printJson, requiredPositional, stringOption, UsageError } from './_command.js';
import { hubClient, hubCommand } from './_hub.js';
import { wantsJson } from './_options.js';

const ACTIONS = ['create', 'show', 'watch', 'say', 'pause', 'resume', 'cancel'];

/** One event as `agora room watch` prints it: a line for people, or JSON. */
function printEvent(event: RoomEvent, json: boolean): void {
  const { data } = event;
  if (json) printJson({ id: event.id, type: event.type, data });
  else if (event.type === 'turn_notification')
    process.stdout.write(`— turn ${String(data.turn)}: ${String(data.speaker)} (${String(data.why)})\n`);
  else if (event.type === 'new_message')
    process.stdout.write(
      `${String(data.speaker)}${data.kind === 'agent' ? '' : ` [${String(data.kind)}]`}: ${String(data.text)}\n`,
    );
  else if (event.type === 'flow_completed') process.stdout.write(`room ended: ${String(data.reason)}\n`);
  else process.stdout.write(`room is ${String(data.state)}\n`);
}

/** `agora room <action>`: creates, shows, watches and steers rooms on a hub. */
export const command = hubCommand(
  {
    name: 'room',
    summary: 'Create, watch and steer rooms of agents on a hub',
    usage:
      'agora room create --topic "<topic>" --participant <agent> … | show|watch|pause|resume|cancel <id> | say <id> "<text>"',
  },
  {
    options: {
      topic: { type: 'string', value: '<text>', description: 'create: what the room discusses' },
      participant: {
        type: 'string',
        value: '<agent>',
        description: "create: a registered agent's name or id, or a URL (repeatable)",
        multiple: true,
      },
      pattern: {
        type: 'string',
        value: '<pattern>',
        description: 'create: round-robin, moderated or free-form',
        default: 'round-robin',
      },
      lead: {
        type: 'string',
        value: '<agent>',
        description: 'create: the lead of a moderated room (one of the participants)',
      },
      'max-turns': { type: 'string', value: '<n>', description: 'create: turns at most', default: '12' },
      'turn-timeout': { type: 'string', value: '<seconds>', description: 'create: time each turn has', default: '30' },
      budget: { type: 'string', value: '<tokens>', description: 'create: tokens the room may spend' },
      from: { type: 'string', value: '<name>', description: 'say: who speaks', default: 'person' },
    },
    json: 'Print JSON',
    details:
      'Examples:\n  agora room create --topic "Review PR 42" --participant architect --participant reviewer --participant tester\n  agora room watch <id>\n  agora room say <id> "Focus on the tests"',
    async run(args) {
      const action = requiredPositional(args, 0, '<action>');
      if (!ACTIONS.includes(action)) throw new UsageError(`unknown action ${action}: one of ${ACTIONS.join(', ')}`);
      if (!stringOption(args, 'hub')) throw new UsageError('no hub: pass --hub <url> or set AGORA_HUB');
      const hub = await hubClient(args);
      const json = wantsJson(args);
      if (action === 'create') {
        // Checked here, in the CLI's words: the hub would answer the same with its schema's text.
        if (!stringOption(args, 'topic')?.trim())
          throw new UsageError('create: missing --topic "<what the room discusses>"');
        if (((args.values.participant as string[] | undefined) ?? []).length < 2)
          throw new UsageError('create: a room needs at least two --participant <agent>');
        const budget = numberOption(args, 'budget', { min: 1, integer: true });
        const lead = stringOption(args, 'lead');
        const maxTurns = numberOption(args, 'max-turns', { min: 1, integer: true });
        const room = await hub.createRoom({
          topic: stringOption(args, 'topic') ?? '',
          participants: (args.values.participant as string[] | undefined) ?? [],
          pattern: stringOption(args, 'pattern') as RoomRequest['pattern'],
          ...(lead ? { lead } : {}),
          ...(maxTurns ? { maxTurns } : {}),
          turnTimeoutMs: Math.round((numberOption(args, 'turn-timeout', { min: 0.1 }) ?? 30) * 1000),
          ...(budget ? { budget: { tokens: budget } } : {}),
        });
        if (json) printJson(room);
        else process.stdout.write(`${room.id}\n`);
        return 0;
      }
      const id = requiredPositional(args, 1, '<id>');
      if (action === 'watch') {
        const onResume = (last: number) =>
          process.stderr.write(`agora room: stream dropped, resuming after event ${last}\n`);
        for await (const event of hub.watch(id, { onResume })) printEvent(event, json);
        return 0;
      }
      const room =
        action === 'show'
          ? await hub.room(id)
          : action === 'say'
            ? await hub.say(id, requiredPositional(args, 2, '"<text>"'), stringOption(args, 'from'))
            : await hub.control(id, action as 'pause' | 'resume' | 'cancel');
      if (json || action === 'show') printJson(room);
      else process.stdout.write(`${room.id}: ${room.state}\n`);
      return 0;
    },
  },
);
