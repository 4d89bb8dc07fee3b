// `npm run example:weather`: a weather agent and an assistant agent. The assistant's typed task goes from natural
// language to a negotiated protocol, then to routines on both sides, and each query prints what it cost.
//
// Offline by default: both agents' LLM is the deterministic fake brain (./brain.ts). With ANTHROPIC_API_KEY set,
// Claude does the thinking instead. The agents run in temporary copies of their folders, so the state they
// learn (`.agora/`, negotiated protocols, generated routines) never lands in the repository.
// `--queries N` sets the number of task calls (default 20: 5 in natural language, 5 looking for a protocol,
// the negotiation at the 11th, 5 under it with LLMs, then routines). Exits 1 when an answer is wrong.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { startAgent, z } from 'agora-agents';
import {
  agentCost,
  approvedRoutines,
  columns,
  exampleLlm,
  minus,
  pathOf,
  quietLogger,
  routineAnswers,
  startAssistant,
  temporaryCopy,
} from '../_shared.js';
import { forecast, weatherQuery } from './data.js';

const { values } = parseArgs({ options: { queries: { type: 'string', default: '20' } } });
const queries = Number(values.queries);

const { llm, name, close: closeLlm } = await exampleLlm();
// The weather agent's folder holds protocols/, routines/ and tools/; its tool reads ../data.ts.
const folder = await temporaryCopy('agora-weather-', { agent: 'weather/agent', 'data.ts': 'weather/data.ts' });
const weather = await startAgent({
  dir: join(folder.dir, 'agent'),
  name: 'weather',
  description: 'Weather forecasts for cities.',
  port: 0,
  host: '127.0.0.1',
  llm,
  // After 5 protocol queries answered by its LLM, the LLM writes a routine; the example approves it unread.
  routineThreshold: 5,
  autoApprove: true,
  watch: false,
  logger: quietLogger,
});
const assistant = await startAssistant({ dir: join(folder.dir, 'assistant'), llm, logger: quietLogger });
let mismatches = 0;
console.log(`Weather agent at ${weather.url}; both agents think with ${name}.\n`);

// 1. The weather agent's own protocol has a hand-written routine: a query under it costs no LLM call.
const chanceOfRain = await readFile(join(folder.dir, 'agent/protocols/chance-of-rain.md'), 'utf8');
const before = agentCost(weather);
const { body } = await assistant.sender.query(weather.url, {
  protocol: chanceOfRain,
  body: { city: 'Paris', date: '2025-06-01' },
});
const expected = { precipitation: forecast('Paris', '2025-06-01').precipitation };
if (!isDeepStrictEqual(body, expected)) mismatches++;
console.log(
  `"Chance of rain" in Paris on 2025-06-01: ${JSON.stringify(body)}, by the hand-written routine, ${minus(agentCost(weather), before).calls} LLM calls.\n`,
);

// 2. A typed task. It fits no protocol the weather agent lists ("Chance of rain" lacks the weather), so the
// assistant negotiates one at its 11th call; then each side writes a routine after 5 calls under it.
const getWeather = assistant.sender.task({
  name: 'get_weather',
  description: 'The weather forecast for a city on a date.',
  input: z.object({ city: z.string(), date: z.string().describe('YYYY-MM-DD') }),
  output: z.object({ weather: z.string(), precipitation: z.number().describe('chance of precipitation in %') }),
});

const widths = [3, 20, 18, 26, 22, 22];
console.log(columns(['#', 'query', 'answer', 'path', 'assistant LLM', 'weather LLM'], widths));
const approved = new Map<string, number>();
let negotiatedAt: number | undefined;
for (let index = 1; index <= queries; index++) {
  const input = weatherQuery(index - 1);
  const start = { assistant: assistant.cost(), weather: agentCost(weather), routines: routineAnswers(weather) };
  const output = await getWeather(input, { target: weather.url });
  // Routines are written in the background: wait for that work, so every run tells the same story.
  await Promise.all([weather.generator?.idle(), assistant.idle()]);

  const correct = isDeepStrictEqual(output, forecast(input.city, input.date));
  if (!correct) mismatches++;
  if (assistant.last?.hash && negotiatedAt === undefined) negotiatedAt = index;
  const spent = {
    assistant: minus(assistant.cost(), start.assistant),
    weather: minus(agentCost(weather), start.weather),
  };
  const cost = (value: { calls: number; tokens: number }) => `${value.calls} calls, ${value.tokens} tokens`;
  console.log(
    columns(
      [
        index,
        `${input.city} ${input.date}`,
        `${output.weather}, ${output.precipitation}%${correct ? '' : ' MISMATCH'}`,
        pathOf(assistant.last, routineAnswers(weather) > start.routines),
        cost(spent.assistant),
        cost(spent.weather),
      ],
      widths,
    ),
  );
  for (const [side, names] of [
    ['weather agent', await approvedRoutines(weather)],
    ['assistant', await assistant.approved()],
  ] as const) {
    for (const routine of names) if (!approved.has(`${side}: ${routine}`)) approved.set(`${side}: ${routine}`, index);
  }
}

console.log('');
const negotiation = (await assistant.sender.taskState('get_weather', weather.url)).negotiation;
if (negotiation?.outcome === 'agreed') {
  console.log(
    `Protocol negotiated at query ${negotiatedAt}, in ${negotiation.rounds} round${negotiation.rounds === 1 ? '' : 's'}, sha1 ${negotiation.hash}:`,
  );
  if (negotiation.path)
    console.log(`${(await readFile(negotiation.path, 'utf8')).trim().replace(/^(?=.)/gm, '    ')}\n`);
}
for (const [routine, index] of approved) console.log(`Routine approved after query ${index}: ${routine}`);
const total = { assistant: assistant.cost(), weather: agentCost(weather) };
console.log(
  `Total: assistant ${total.assistant.calls} LLM calls, ${total.assistant.tokens} tokens; weather agent ${total.weather.calls} LLM calls, ${total.weather.tokens} tokens.`,
);
console.log(
  mismatches
    ? `${mismatches} answer(s) differ from the hidden table.`
    : `All ${queries + 1} answers match the hidden table.`,
);

await assistant.close();
await weather.close();
await closeLlm();
await folder.remove();
process.exitCode = mismatches ? 1 : 0;
