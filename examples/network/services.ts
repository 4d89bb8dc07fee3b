// The network example's domains: each service's tool over its hidden table, the tasks users have toward it, and
// the queries they cycle over. Only the tools and the checks read the tables: the LLMs (real or the fake brain)
// see them only through tool calls, and routines only through `context.tools`.
import { createHash } from 'node:crypto';
import { defineTool, z, type Tool } from 'agora-agents';
import getForecast from '../weather/agent/tools/get-forecast.js';
import { forecast, weatherQuery } from '../weather/data.js';

function digest(text: string): Buffer {
  return createHash('sha1').update(text).digest();
}

// --- currency --------------------------------------------------------------------------------------------------

const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CHF', 'INR'];

/** What one unit of a currency is worth in a common reference (hidden). */
function unitValue(code: string): number {
  const bytes = digest(`currency|${code}`);
  return code === 'JPY' || code === 'INR' ? 0.005 + bytes[0]! / 20_000 : 0.6 + bytes[0]! / 250;
}

/** Converts an amount; throws "Unsupported currency" for a code it does not know. */
export function convertCurrency(amount: number, from: string, to: string): { converted: number; rate: number } {
  if (!CURRENCIES.includes(from) || !CURRENCIES.includes(to)) throw new Error('Unsupported currency');
  const rate = Math.round((unitValue(from) / unitValue(to)) * 10_000) / 10_000;
  return { converted: Math.round(amount * rate * 100) / 100, rate };
}

// --- trains ----------------------------------------------------------------------------------------------------

const STATIONS = ['Paris', 'Lyon', 'Marseille', 'Lille', 'Bordeaux', 'Nantes'];
const clock = (minutes: number) =>
  `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

/** The first train from a station to another at or after a time (HH:MM); throws "Unsupported route" or "Invalid time". */
export function nextTrain(from: string, to: string, after: string): { departure: string; platform: number } {
  if (!STATIONS.includes(from) || !STATIONS.includes(to) || from === to) throw new Error('Unsupported route');
  const time = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(after);
  if (!time) throw new Error('Invalid time');
  const bytes = digest(`train|${from}|${to}`);
  // A train every 30 to 75 minutes from about 5 am, all day long.
  const period = 30 + (bytes[0]! % 4) * 15;
  const first = 5 * 60 + (bytes[1]! % period);
  const wanted = Number(time[1]) * 60 + Number(time[2]);
  const index = Math.max(0, Math.ceil((wanted - first) / period));
  const departure = first + index * period;
  if (departure >= 24 * 60) throw new Error('No train after that time');
  return { departure: clock(departure), platform: 1 + ((bytes[2]! + index) % 12) };
}

// --- services, tasks, queries ----------------------------------------------------------------------------------

/** A service agent of the network: its name, what it says of itself, its one tool. */
export type Service = { name: string; description: string; tool: Tool };

export const SERVICES: Service[] = [
  { name: 'weather', description: 'Weather forecasts for cities.', tool: getForecast },
  {
    name: 'currency',
    description: "Currency conversion at the day's rates.",
    tool: defineTool({
      name: 'convert_currency',
      description:
        'Converts an amount from one currency to another (ISO codes: EUR USD GBP JPY CHF INR): {"converted": number, "rate": number}. Fails with "Unsupported currency".',
      input: z.object({ amount: z.number(), from: z.string(), to: z.string() }),
      run: ({ amount, from, to }) => convertCurrency(amount, from, to),
    }),
  },
  {
    name: 'trains',
    description: 'Train timetables between French cities.',
    tool: defineTool({
      name: 'next_train',
      description:
        'The next train from a station to another at or after a time (HH:MM): {"departure": "HH:MM", "platform": number}. Fails with "Unsupported route".',
      input: z.object({ from: z.string(), to: z.string(), after: z.string().describe('HH:MM') }),
      run: ({ from, to, after }) => nextTrain(from, to, after),
    }),
  },
];

const Money = z.object({
  amount: z.number(),
  from: z.string().describe('ISO code'),
  to: z.string().describe('ISO code'),
});
const Trip = z.object({ from: z.string(), to: z.string(), after: z.string().describe('HH:MM') });
const Place = z.object({ city: z.string(), date: z.string().describe('YYYY-MM-DD') });

/** A user's task toward a service: its spec, the i-th input it sends, and the right answer from the hidden table. */
export type NetworkTask = {
  service: string;
  /** What the user asks the hub to route: the service is not told to the user. */
  goal: string;
  spec: { name: string; description: string; input: z.ZodType; output: z.ZodObject };
  input(index: number): Record<string, string | number>;
  expected(input: Record<string, string | number>): Record<string, unknown>;
};

// Every pair of different currencies (or stations) in turn: the offset runs over 1..5, never 0.
function moneyQuery(index: number) {
  const offset = 1 + (Math.floor(index / CURRENCIES.length) % (CURRENCIES.length - 1));
  return {
    amount: [10, 25, 100, 250, 1000][index % 5]!,
    from: CURRENCIES[index % CURRENCIES.length]!,
    to: CURRENCIES[(index + offset) % CURRENCIES.length]!,
  };
}

function tripQuery(index: number) {
  const offset = 1 + (Math.floor(index / STATIONS.length) % (STATIONS.length - 1));
  return {
    from: STATIONS[index % STATIONS.length]!,
    to: STATIONS[(index + offset) % STATIONS.length]!,
    after: clock(6 * 60 + ((index * 97) % (14 * 60))),
  };
}

/** Projects a full answer onto the fields a task asks for. */
function only(output: z.ZodObject, answer: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.keys(output.shape).map((key) => [key, answer[key]]));
}

function task(
  service: string,
  goal: string,
  name: string,
  description: string,
  input: z.ZodObject,
  output: z.ZodObject,
  query: (index: number) => Record<string, string | number>,
  answer: (input: any) => Record<string, unknown>,
): NetworkTask {
  return {
    service,
    goal,
    spec: { name, description, input, output },
    input: query,
    expected: (value) => only(output, answer(value)),
  };
}

const weatherAnswer = ({ city, date }: { city: string; date: string }) => forecast(city, date);
const moneyAnswer = ({ amount, from, to }: { amount: number; from: string; to: string }) =>
  convertCurrency(amount, from, to);
const tripAnswer = ({ from, to, after }: { from: string; to: string; after: string }) => nextTrain(from, to, after);

/** The users and their tasks. Bob's rain check fits Alice's weather protocol, Carol's tasks fit the others'. */
export const USERS: Record<string, NetworkTask[]> = {
  alice: [
    task(
      'weather',
      'weather forecast for a city',
      'get_weather',
      'The weather forecast for a city on a date.',
      Place,
      z.object({ weather: z.string(), precipitation: z.number() }),
      weatherQuery,
      weatherAnswer,
    ),
    task(
      'currency',
      'convert money to another currency',
      'convert_money',
      'Convert an amount of money to another currency.',
      Money,
      z.object({ converted: z.number(), rate: z.number() }),
      moneyQuery,
      moneyAnswer,
    ),
  ],
  bob: [
    task(
      'weather',
      'will it rain: the weather in a city',
      'rain_check',
      'Will it rain? The chance of precipitation in a city on a date.',
      Place,
      z.object({ precipitation: z.number() }),
      (index) => weatherQuery(index + 37),
      weatherAnswer,
    ),
    task(
      'trains',
      'the next train between two cities',
      'next_train',
      'The next train between two cities after a time.',
      Trip,
      z.object({ departure: z.string(), platform: z.number() }),
      tripQuery,
      tripAnswer,
    ),
  ],
  carol: [
    task(
      'trains',
      'catch a train',
      'catch_train',
      'When the next train leaves, from a city to another after a time.',
      Trip,
      z.object({ departure: z.string() }),
      (index) => tripQuery(index + 11),
      tripAnswer,
    ),
    task(
      'currency',
      'a price in another currency',
      'price_in',
      'A price in another currency.',
      Money,
      z.object({ converted: z.number() }),
      (index) => moneyQuery(index + 7),
      moneyAnswer,
    ),
  ],
};
