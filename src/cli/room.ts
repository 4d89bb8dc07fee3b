import { AgoraError } from '../errors.js';
import { numberOption, printJson, requiredPositional, stringOption, UsageError } from './_command.js';
import { hubCommand } from './_hub.js';
import { wantsJson } from './_options.js';

const ACTIONS = ['create', 'show', 'watch', 'say', 'pause', 'resume', 'cancel'];

/** Sends one request to the hub's rooms API; failures as AgoraError with the hub's text. */
async function call(hub: string, path: string, token: string | undefined, body?: unknown): Promise<any> {
  const response = await fetch(`${hub.replace(/\/+$/, '')}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await response.json().catch(() => ({}))) as { error?: string };
  if (!response.ok) throw new AgoraError('PEER_FAILURE', `${body === undefined ? 'GET' : 'POST'} ${hub}${path}: HTTP ${response.status}: ${json.error ?? 'no detail'}`, { status: response.status });
  return json;
}

/** Prints a room's events as they come, reconnecting (from the last event id) when the stream drops, until it ends. */
async function watch(hub: string, id: string, token: string | undefined, json: boolean): Promise<void> {
  let last = 0;
  for (let attempt = 0; attempt < 5; attempt++) {
    const response = await fetch(`${hub.replace(/\/+$/, '')}/rooms/${encodeURIComponent(id)}/events`, { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(last ? { 'last-event-id': String(last) } : {}) } });
    if (!response.ok) throw new AgoraError('PEER_FAILURE', `GET ${hub}/rooms/${id}/events: HTTP ${response.status}`, { status: response.status });
    let text = '';
    try {
      for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) {
        text += chunk;
        const blocks = text.split('\n\n');
        text = blocks.pop()!;
        for (const block of blocks) {
          const fields = Object.fromEntries(block.split('\n').filter((line) => !line.startsWith(':')).map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
          if (!fields.id) continue;
          last = Number(fields.id);
          const data = JSON.parse(fields.data!) as Record<string, unknown>;
          if (json) printJson({ id: last, type: fields.event, data });
          else if (fields.event === 'turn_notification') process.stdout.write(`— turn ${String(data.turn)}: ${String(data.speaker)} (${String(data.why)})\n`);
          else if (fields.event === 'new_message') process.stdout.write(`${String(data.speaker)}${data.kind === 'agent' ? '' : ` [${String(data.kind)}]`}: ${String(data.text)}\n`);
          else if (fields.event === 'flow_completed') {
            process.stdout.write(`room ended: ${String(data.reason)}\n`);
            return;
          } else process.stdout.write(`room is ${String(data.state)}\n`);
        }
      }
      return;
    } catch {
      process.stderr.write(`agora room: stream dropped, resuming after event ${last}\n`);
    }
  }
}

/** `agora room <action>`: creates, shows, watches and steers rooms on a hub. */
export const command = hubCommand({ name: 'room', summary: 'Create, watch and steer rooms of agents on a hub', usage: 'agora room create --topic "<topic>" --participant <agent> … | show|watch|pause|resume|cancel <id> | say <id> "<text>"' }, {
  options: {
    token: { type: 'string', value: '<token>', description: "The hub's token", env: 'AGORA_HUB_TOKEN' },
    topic: { type: 'string', value: '<text>', description: 'create: what the room discusses' },
    participant: { type: 'string', value: '<agent>', description: "create: a registered agent's name or id, or a URL (repeatable)", multiple: true },
    pattern: { type: 'string', value: '<pattern>', description: 'create: round-robin, moderated or free-form', default: 'round-robin' },
    lead: { type: 'string', value: '<agent>', description: 'create: the lead of a moderated room (one of the participants)' },
    'max-turns': { type: 'string', value: '<n>', description: 'create: turns at most', default: '12' },
    'turn-timeout': { type: 'string', value: '<seconds>', description: 'create: time each turn has', default: '30' },
    budget: { type: 'string', value: '<tokens>', description: 'create: tokens the room may spend' },
    from: { type: 'string', value: '<name>', description: 'say: who speaks', default: 'person' },
  },
  json: 'Print JSON',
  details: 'Examples:\n  agora room create --topic "Review PR 42" --participant architect --participant reviewer --participant tester\n  agora room watch <id>\n  agora room say <id> "Focus on the tests"',
  async run(args) {
    const action = requiredPositional(args, 0, '<action>');
    if (!ACTIONS.includes(action)) throw new UsageError(`unknown action ${action}: one of ${ACTIONS.join(', ')}`);
    const hub = stringOption(args, 'hub') ?? process.env.AGORA_HUB;
    if (!hub) throw new UsageError('no hub: pass --hub <url> or set AGORA_HUB');
    const token = stringOption(args, 'token');
    const json = wantsJson(args);
    if (action === 'create') {
      const budget = numberOption(args, 'budget', { min: 1, integer: true });
      const room = await call(hub, '/rooms', token, {
        topic: stringOption(args, 'topic') ?? '',
        participants: (args.values.participant as string[] | undefined) ?? [],
        pattern: stringOption(args, 'pattern'),
        ...(stringOption(args, 'lead') ? { lead: stringOption(args, 'lead') } : {}),
        maxTurns: numberOption(args, 'max-turns', { min: 1, integer: true }),
        turnTimeoutMs: Math.round((numberOption(args, 'turn-timeout', { min: 0.1 }) ?? 30) * 1000),
        ...(budget ? { budget: { tokens: budget } } : {}),
      });
      if (json) printJson(room);
      else process.stdout.write(`${room.id}\n`);
      return 0;
    }
    const id = requiredPositional(args, 1, '<id>');
    if (action === 'watch') await watch(hub, id, token, json);
    else {
      const path = `/rooms/${encodeURIComponent(id)}`;
      const room =
        action === 'show' ? await call(hub, path, token) : action === 'say' ? await call(hub, `${path}/messages`, token, { text: requiredPositional(args, 2, '"<text>"'), from: stringOption(args, 'from') }) : await call(hub, `${path}/control`, token, { action });
      if (json || action === 'show') printJson(room);
      else process.stdout.write(`${room.id}: ${room.state}\n`);
    }
    return 0;
  },
});
