import { checkWorkers, isWorker, leaveCluster, runPrimary, startWorker } from '../agent/workers.js';
import { isSharedStore, openStores } from '../agent/stores.js';
import { plural } from '../_plural.js';
import {
  defineCommand,
  numberOption,
  printJson,
  requiredPositional,
  stringOption,
  UsageError,
  type ParsedArgs,
} from './_command.js';
import { CLIENT_CREDENTIALS_OPTIONS, clientCredentials } from './_credentials.js';
import { hubClient, hubOption } from './_hub.js';
import {
  ALLOWED_HOST_OPTION,
  allowedHosts,
  AUTH_OPTIONS,
  chooseLlm,
  CORS_ORIGIN_OPTION,
  TRACE_OPTION,
  HUB_TOKEN_OPTION,
  hostOf,
  corsOrigins as corsOriginsOf,
  jsonOption,
  listenOptions,
  llmLabel,
  llmOptions,
  oauthOption,
  RATE_LIMIT_OPTION,
  requiredTokensOption,
  storeOption,
  STORE_CONNECTION_OPTIONS,
  storeOf,
  storeUsageError,
  wantsJson,
} from './_options.js';
import { commandLogger, LOG_OPTIONS } from './_logging.js';

/** `agora hub`: serves a hub; `agora hub register <url>` registers an agent with one. */
export const command = defineCommand(
  {
    name: 'hub',
    summary: 'Run a hub (directory, protocol database, routing, chains), or register an agent with one',
    usage:
      'agora hub [options]  |  agora hub register <agent-url> [--hub <url>] [--hub-token <token>] [--name <name>] [--description <text>] [--capability <word>]…',
  },
  {
    options: {
      ...listenOptions('AGORA_HUB_PORT', 4000),
      store: storeOption(
        'Where the hub keeps its state (Redis: shared by several hubs, kept across restarts; `?prefix=` in the URL)',
        'AGORA_HUB_STORE',
        'memory',
      ),
      ...STORE_CONNECTION_OPTIONS,
      peer: {
        type: 'string',
        multiple: true,
        value: '<url>',
        description: "Pull this hub's catalogue, verifying every document by hash (repeatable)",
        env: 'AGORA_HUB_PEERS',
      },
      token: requiredTokensOption('for writes, /runs and /metrics (repeatable)'),
      'allow-private-agents': {
        type: 'boolean',
        description: 'Accept agents (and peers) on loopback and private networks',
        env: 'AGORA_ALLOW_PRIVATE_SOURCES',
        default: false,
      },
      'check-interval': {
        type: 'string',
        value: '<seconds>',
        description: 'Seconds between two checks of an agent',
        default: '60',
      },
      'rate-limit': RATE_LIMIT_OPTION,
      ...llmOptions('Model that routes goals keywords leave tied'),
      'cors-origin': CORS_ORIGIN_OPTION,
      'allowed-host': ALLOWED_HOST_OPTION,
      ...AUTH_OPTIONS,
      ...CLIENT_CREDENTIALS_OPTIONS,
      ...LOG_OPTIONS,
      trace: TRACE_OPTION,
      'max-turn-reply-bytes': {
        type: 'string',
        value: '<bytes>',
        description: 'Largest room turn reply read from a participant, after decompression (65536 to 1048576)',
        default: '262144',
      },
      'max-run-bytes': {
        type: 'string',
        value: '<bytes>',
        description: 'Largest chain checkpoint accepted',
        default: '262144',
      },
      'max-runs-bytes': {
        type: 'string',
        value: '<bytes>',
        description: 'All chain checkpoints together; the oldest finished ones make room',
        default: '67108864',
      },
      'usage-reports': {
        type: 'string',
        value: '<n>',
        description: "Usage reports (POST /usage) kept per series for the dashboard's Cost panel, in memory; 0: none",
        default: '1000',
      },
      'max-documents-per-client': {
        type: 'string',
        value: '<n>',
        description: 'New protocol documents one client may add (publishing or registering)',
        default: '500',
      },
      'remove-down-after': {
        type: 'string',
        value: '<hours>',
        description: 'Remove an agent down and unseen this long',
        default: '168',
      },
      workers: {
        type: 'string',
        value: '<n>',
        description: 'Processes serving the one port (node cluster); over 1 needs --store redis://…',
        env: 'AGORA_HUB_WORKERS',
        default: '1',
      },
      'max-room-watchers': {
        type: 'string',
        value: '<n>',
        description: 'Open SSE watchers of one room at most',
        default: '256',
      },
      'max-room-watchers-per-client': {
        type: 'string',
        value: '<n>',
        description: 'Open SSE watchers of rooms per client at most',
        default: '64',
      },
      hub: hubOption('`register`: the hub'),
      'hub-token': {
        ...HUB_TOKEN_OPTION,
        description: '`register`: bearer token of that hub (not the tokens this hub requires, which are --token)',
      },
      name: { type: 'string', value: '<name>', description: "`register`: the agent's directory name" },
      description: {
        type: 'string',
        value: '<text>',
        description: '`register`: what the agent does (searched and routed on)',
      },
      capability: {
        type: 'string',
        multiple: true,
        value: '<word>',
        description:
          '`register`: a capability of the agent, routed on (repeatable or comma-separated); given ones replace what the agent lists',
      },
      json: { ...jsonOption('`register`: print the record as JSON'), default: false },
    },
    details: [
      'Examples:',
      '  agora hub --port 4000 --allow-private-agents',
      '  agora hub --store redis://127.0.0.1:6379/0 --peer https://hub.example',
      '  agora hub register http://127.0.0.1:3000 --hub http://127.0.0.1:4000 --name weather',
      '  agora hub register http://127.0.0.1:8089 --name reviewer --capability code-review --capability python',
      "An agent that says nothing of itself (a ROAR agent served by ROAR's own router: /roar/health, no card) is known",
      'by what `register` gives: pass its --name, --description and --capability.',
    ].join('\n'),
    async run(args) {
      if (args.positionals[0] === 'register') return register(args);
      if (args.positionals.length > 0)
        throw new UsageError(`unknown subcommand ${JSON.stringify(args.positionals[0])} (expected register)`);
      const [{ startHub }, { createHubDashboard, roomsSource }] = await Promise.all([
        import('../hub/server.js'),
        import('../dashboard/hub-dashboard.js'),
      ]);
      const worker = startWorker();
      const { logger, say, requestLog, requestLogSample } = commandLogger(args, 'agora-hub', 'agora hub', worker);
      const store = storeOf(args) ?? 'memory';
      const workers = numberOption(args, 'workers', { min: 1, integer: true }) ?? 1;
      try {
        checkWorkers(workers, isSharedStore(store));
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
      if (workers > 1 && !isWorker()) {
        const host = hostOf(args);
        const { urlOf } = await import('../edge/node.js');
        return runPrimary({
          workers,
          logger,
          onListening: (port) =>
            say(`${workers} workers listening on ${urlOf(host, port)}`, {
              event: 'listening',
              url: urlOf(host, port),
              workers,
            }),
        });
      }
      const stores = await openStores(store, { role: 'hub', logger }).catch(storeUsageError);
      const llm = await chooseLlm(args);
      const tokens = args.values.token as string[] | undefined;
      const rate = numberOption(args, 'rate-limit', { min: 1, integer: true });
      const corsOrigins = corsOriginsOf(args);
      const oauth = oauthOption(args, undefined);
      // The hub's own credentials, for its requests to agents: one client, each agent's origin its token's audience.
      const tokenSource = clientCredentials(args, 'each-origin');
      const watchers = {
        maxWatchersPerRoom: numberOption(args, 'max-room-watchers', { min: 1, integer: true }) ?? 256,
        maxWatchersPerClient: numberOption(args, 'max-room-watchers-per-client', { min: 1, integer: true }) ?? 64,
      };
      const running = await startHub({
        port: numberOption(args, 'port', { integer: true }) ?? 4000,
        host: hostOf(args),
        allowPrivateAgents: args.values['allow-private-agents'] === true,
        checkIntervalMs: (numberOption(args, 'check-interval', { min: 1 }) ?? 60) * 1000,
        maxRunBytes: numberOption(args, 'max-run-bytes', { min: 1024, integer: true }) ?? 262_144,
        maxRunsBytes: numberOption(args, 'max-runs-bytes', { min: 1024, integer: true }) ?? 67_108_864,
        maxDocumentsPerClient: numberOption(args, 'max-documents-per-client', { min: 1, integer: true }) ?? 500,
        maxUsageReports: numberOption(args, 'usage-reports', { min: 0, integer: true }) ?? 1000,
        removeDownAfterMs: (numberOption(args, 'remove-down-after', { min: 0.01 }) ?? 168) * 3_600_000,
        peers: (args.values.peer as string[] | undefined) ?? [],
        logger,
        store: stores.hub,
        rooms: {
          ...watchers,
          maxReplyBytes: numberOption(args, 'max-turn-reply-bytes', { min: 65_536, integer: true }) ?? 262_144,
          store: stores.rooms,
        },
        llm,
        tokens: tokens?.length ? tokens : undefined,
        oauth,
        ...(tokenSource ? { tokenSource } : {}),
        rateLimit: rate ? { windowMs: 60_000, max: rate, ...stores.shared } : undefined,
        corsOrigins: corsOrigins.length ? corsOrigins : undefined,
        allowedHosts: allowedHosts(args),
        server: { requestLog, requestLogSample },
        mounts: (hub, rooms) => [
          createHubDashboard(hub, {
            logger,
            tokens,
            oauth: oauth !== undefined,
            rooms: rooms && roomsSource(rooms),
          }),
        ],
      });
      say(`store ${stores.kind}, LLM routing: ${llmLabel(llm)}`, {
        event: 'hub',
        store: stores.kind,
        llm: llmLabel(llm),
      });
      if (worker === undefined) say(`listening on ${running.url}`, { event: 'listening', url: running.url });
      else say(`worker ready on ${running.url}`, { event: 'worker-ready', url: running.url });
      say(`dashboard at ${running.url}/dashboard/`, { event: 'dashboard', url: `${running.url}/dashboard/` });
      await new Promise<void>((done) => {
        const stop = (signal: NodeJS.Signals) => {
          say(`stopping (${signal})`, { event: 'stopping', signal });
          void running
            .close()
            .then(() => stores.close())
            .finally(() => {
              say('hub stopped', { event: 'stopped' });
              leaveCluster();
              done();
            });
        };
        process.once('SIGINT', () => stop('SIGINT'));
        process.once('SIGTERM', () => stop('SIGTERM'));
      });
      return 0;
    },
  },
);

async function register(args: ParsedArgs): Promise<number> {
  const url = requiredPositional(args, 1, '<agent-url>');
  // `--token` is what a hub being served requires; taken silently here it would be sent nowhere.
  if (args.values.token !== undefined && !process.env.AGORA_TOKENS)
    throw new UsageError(
      'hub register: --token sets the tokens a served hub requires; pass the token of the hub you register with as --hub-token (AGORA_HUB_TOKEN)',
    );
  const hub = await hubClient(args);
  const name = stringOption(args, 'name');
  const description = stringOption(args, 'description');
  const given = args.values.capability as string[] | undefined;
  const capabilities = given
    ?.flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter(Boolean);
  const record = await hub.register(url, {
    ...(name ? { name } : {}),
    ...(description ? { description } : {}),
    ...(capabilities?.length ? { capabilities } : {}),
  });
  if (wantsJson(args)) printJson(record);
  else {
    const protocols = `${plural(record.protocols.length, 'protocol')}${record.protocols.length ? `: ${record.protocols.map((protocol) => protocol.name).join(', ')}` : ''}`;
    // An agent of another protocol is reached by its kind and routed by its capabilities: say both.
    const foreign =
      record.kind === 'agora'
        ? ''
        : `; ${record.kind}, capabilities: ${record.capabilities.length ? record.capabilities.join(', ') : 'none'}`;
    process.stdout.write(`registered ${record.name} (${record.id}) at ${record.url}: ${protocols}${foreign}\n`);
    if (record.lastError) process.stdout.write(`warning: ${record.lastError}\n`);
  }
  return 0;
}
