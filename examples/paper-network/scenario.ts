// The paper network's world: 15 service agents (hotels, restaurants, weather, cinemas, ski resorts, a railway, a
// bank, a taxi firm) over 12 tools, 15 task schemas users have toward them, 85 users with their habits, and the
// script of actions. Everything comes from one seed: the hidden tables the tools read, the users' habits and the
// order of the actions. Only the tools and the client's checks read the tables; the LLMs see them through tool
// calls, the routines through `context.tools`.
import { createHash } from 'node:crypto';
import { defineTool, z, type Tool } from 'agora-agents';

/** A number from 0 to 1 drawn from a seed (mulberry32: small, fast, and the same on every machine). */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The hidden table of a service: a number from 0 to 1 for each question, fixed by the seed. */
function table(seed: number, service: string) {
  return (...key: (string | number)[]): number =>
    createHash('sha1')
      .update(`${seed}|${service}|${key.join('|')}`)
      .digest()
      .readUInt32BE(0) / 4294967296;
}

const between = (low: number, high: number, draw: number) => low + Math.floor(draw * (high - low + 1));
const pickOf = <T>(items: readonly T[], draw: number): T => items[Math.floor(draw * items.length)]!;

const CITIES = ['Geneva', 'Zurich', 'Bern', 'Lausanne', 'Basel', 'Lugano', 'Sion', 'Zermatt'];
const FILMS = ['Alpine Dawn', 'The Long Descent', 'Night Train', 'Blue Glacier', 'Summit', 'Last Lift'];
const COURSES = ['starter', 'main', 'dessert'];
const CURRENCIES = ['CHF', 'EUR', 'USD', 'GBP', 'JPY'];
const dates = Array.from({ length: 28 }, (_, day) => `2026-02-${String(day + 1).padStart(2, '0')}`);
const clock = (minutes: number) =>
  `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

type Input = Record<string, string | number>;
type ToolMaker = (service: string, seed: number) => Tool;

/** A tool over a service's hidden table; its description names every field it takes and gives (models read it). */
function tool<Shape extends z.ZodRawShape>(
  name: string,
  description: string,
  input: Shape,
  answer: (at: ReturnType<typeof table>, input: z.output<z.ZodObject<Shape>>) => Record<string, string | number>,
): ToolMaker {
  return (service, seed) => {
    const at = table(seed, service);
    return defineTool({ name, description, input: z.object(input), run: (value) => answer(at, value) });
  };
}

const TOOLS = {
  hotel_rooms: tool(
    'hotel_rooms',
    'Rooms of this hotel for a stay: takes date, nights and guests; gives {"rooms_free": number, "price_per_night": number}.',
    { date: z.string(), nights: z.number(), guests: z.number() },
    (at, { date, nights, guests }) => ({
      rooms_free: between(0, 12, at('rooms', date, nights, guests)),
      price_per_night: between(90, 420, at('price', date, guests)),
    }),
  ),
  hotel_reviews: tool(
    'hotel_reviews',
    'Guest reviews of this hotel on one aspect: takes aspect; gives {"score": number, "review_count": number}.',
    { aspect: z.string() },
    (at, { aspect }) => ({
      score: between(50, 99, at('score', aspect)) / 10,
      review_count: between(12, 900, at(aspect)),
    }),
  ),
  restaurant_tables: tool(
    'restaurant_tables',
    'Tables of this restaurant: takes date, time and people; gives {"table_free": "yes"|"no", "wait_minutes": number}.',
    { date: z.string(), time: z.string(), people: z.number() },
    (at, { date, time, people }) => {
      const free = at('table', date, time, people) < 0.7;
      return { table_free: free ? 'yes' : 'no', wait_minutes: free ? 0 : between(10, 90, at('wait', date, time)) };
    },
  ),
  restaurant_menu: tool(
    'restaurant_menu',
    'Today\'s menu of this restaurant for a course: takes course; gives {"dish": string, "price": number}.',
    { course: z.string() },
    (at, { course }) => ({
      dish: pickOf(['risotto', 'fondue', 'rösti', 'perch fillet', 'tarte tatin', 'gnocchi'], at('dish', course)),
      price: between(9, 48, at('price', course)),
    }),
  ),
  get_forecast: tool(
    'get_forecast',
    'Weather forecast: takes city and date; gives {"weather": string, "precipitation": number, "temperature": number}.',
    { city: z.string(), date: z.string() },
    (at, { city, date }) => ({
      weather: pickOf(['sunny', 'cloudy', 'rainy', 'snowy', 'windy'], at('sky', city, date)),
      precipitation: between(0, 100, at('rain', city, date)),
      temperature: between(-15, 12, at('temperature', city, date)),
    }),
  ),
  showtimes: tool(
    'showtimes',
    'Screenings of this cinema: takes film and date; gives {"showtime": "HH:MM", "seats_left": number, "ticket_price": number}.',
    { film: z.string(), date: z.string() },
    (at, { film, date }) => ({
      showtime: clock(14 * 60 + 15 * between(0, 32, at('time', film, date))),
      seats_left: between(0, 180, at('seats', film, date)),
      ticket_price: between(12, 24, at('price', film)),
    }),
  ),
  film_info: tool(
    'film_info',
    'About a film this cinema shows: takes film; gives {"duration_minutes": number, "rating": string}.',
    { film: z.string() },
    (at, { film }) => ({
      duration_minutes: between(85, 170, at('length', film)),
      rating: pickOf(['all ages', '12+', '16+'], at('rating', film)),
    }),
  ),
  ski_conditions: tool(
    'ski_conditions',
    'Slopes of this resort: takes date; gives {"snow_cm": number, "lifts_open": number, "avalanche_risk": number}.',
    { date: z.string() },
    (at, { date }) => ({
      snow_cm: between(20, 240, at('snow', date)),
      lifts_open: between(4, 36, at('lifts', date)),
      avalanche_risk: between(1, 5, at('risk', date)),
    }),
  ),
  lift_pass: tool(
    'lift_pass',
    'Lift passes of this resort: takes days and age_group; gives {"pass_price": number}.',
    { days: z.number(), age_group: z.string() },
    (at, { days, age_group }) => ({ pass_price: days * between(45, 95, at('pass', age_group)) }),
  ),
  next_train: tool(
    'next_train',
    'Timetable: takes from, to and after (HH:MM); gives {"departure": "HH:MM", "platform": number}.',
    { from: z.string(), to: z.string(), after: z.string() },
    (at, { from, to, after }) => {
      const [hours, minutes] = after.split(':').map(Number);
      const wait = between(2, 58, at('wait', from, to, after));
      return {
        departure: clock(Math.min(23 * 60 + 59, (hours ?? 0) * 60 + (minutes ?? 0) + wait)),
        platform: between(1, 14, at('platform', from, to)),
      };
    },
  ),
  convert_currency: tool(
    'convert_currency',
    'Converts at today\'s rate: takes amount, from and to (ISO codes); gives {"converted": number, "rate": number}.',
    { amount: z.number(), from: z.string(), to: z.string() },
    (at, { amount, from, to }) => {
      const rate = Math.round((0.5 + at('rate', from, to) * 1.5) * 10_000) / 10_000;
      return { converted: Math.round(amount * rate * 100) / 100, rate };
    },
  ),
  taxi_fare: tool(
    'taxi_fare',
    'Taxi rides: takes from, to and passengers; gives {"fare": number, "eta_minutes": number}.',
    { from: z.string(), to: z.string(), passengers: z.number() },
    (at, { from, to, passengers }) => ({
      fare: between(18, 160, at('fare', from, to)) + 5 * Math.max(0, passengers - 4),
      eta_minutes: between(3, 25, at('eta', from, to, passengers)),
    }),
  ),
} satisfies Record<string, ToolMaker>;

type ToolName = keyof typeof TOOLS;

/** A service agent: its name, what it says of itself, and its tools' names. */
export type Service = { name: string; description: string; tools: ToolName[] };

/** The 15 service agents of the paper's network, by kind. */
export const SERVICES: Service[] = [
  ...['Alpenrose', 'Bellevue', 'Cedar Lodge'].map((hotel) => ({
    name: `hotel-${hotel.toLowerCase().replace(/ /g, '-')}`,
    description: `Hotel ${hotel}: rooms, prices and guest reviews.`,
    tools: ['hotel_rooms', 'hotel_reviews'] as ToolName[],
  })),
  ...['Trattoria Roma', 'Bistro Lyon', 'Sushi Kyoto'].map((restaurant) => ({
    name: restaurant.toLowerCase().replace(/ /g, '-'),
    description: `${restaurant}: tables and the menu of the day.`,
    tools: ['restaurant_tables', 'restaurant_menu'] as ToolName[],
  })),
  ...['alps', 'lakes'].map((region) => ({
    name: `weather-${region}`,
    description: `Weather forecasts for Swiss cities (the ${region} office).`,
    tools: ['get_forecast'] as ToolName[],
  })),
  ...['Rex', 'Lux'].map((cinema) => ({
    name: `cinema-${cinema.toLowerCase()}`,
    description: `Cinema ${cinema}: screenings, seats and films.`,
    tools: ['showtimes', 'film_info'] as ToolName[],
  })),
  ...['Zermatt', 'Verbier'].map((resort) => ({
    name: `ski-${resort.toLowerCase()}`,
    description: `${resort} ski resort: snow, lifts and passes.`,
    tools: ['ski_conditions', 'lift_pass'] as ToolName[],
  })),
  { name: 'swiss-rail', description: 'Train timetables between Swiss cities.', tools: ['next_train'] },
  { name: 'fx-bank', description: "Currency conversion at the day's rates.", tools: ['convert_currency'] },
  { name: 'taxi-geneva', description: 'Taxi fares and waiting times.', tools: ['taxi_fare'] },
];

/** A service's tools over its own hidden tables. */
export function toolsOf(service: Service, seed: number): Tool[] {
  return service.tools.map((name) => TOOLS[name](service.name, seed));
}

/** A task schema: the typed task a user runs, the tool that answers it, and how to draw an input. */
export type TaskSchema = {
  spec: { name: string; description: string; input: z.ZodObject; output: z.ZodObject };
  tool: ToolName;
  draw(next: () => number): Input;
};

function task(
  name: string,
  description: string,
  toolName: ToolName,
  input: z.ZodRawShape,
  output: z.ZodRawShape,
  draw: (next: () => number) => Input,
): TaskSchema {
  return { spec: { name, description, input: z.object(input), output: z.object(output) }, tool: toolName, draw };
}

const date = () => z.string().describe('YYYY-MM-DD');
const pickDate = (next: () => number) => pickOf(dates, next());
const twoCities = (next: () => number) => {
  const from = pickOf(CITIES, next());
  const others = CITIES.filter((city) => city !== from);
  return { from, to: pickOf(others, next()) };
};

/** The 15 task schemas, most popular first (the order the users' habits are drawn in). */
export const TASKS: TaskSchema[] = [
  task(
    'weather_forecast',
    'The weather forecast for a city on a date.',
    'get_forecast',
    { city: z.string(), date: date() },
    { weather: z.string(), precipitation: z.number() },
    (next) => ({ city: pickOf(CITIES, next()), date: pickDate(next) }),
  ),
  task(
    'snow_report',
    'Snow, open lifts and avalanche risk at a ski resort on a date.',
    'ski_conditions',
    { date: date() },
    { snow_cm: z.number(), lifts_open: z.number(), avalanche_risk: z.number() },
    (next) => ({ date: pickDate(next) }),
  ),
  task(
    'hotel_quote',
    'Free rooms and the price per night at a hotel for a stay.',
    'hotel_rooms',
    { date: date(), nights: z.number(), guests: z.number() },
    { rooms_free: z.number(), price_per_night: z.number() },
    (next) => ({ date: pickDate(next), nights: between(1, 7, next()), guests: between(1, 4, next()) }),
  ),
  task(
    'book_table',
    'Whether a restaurant has a table, and the wait.',
    'restaurant_tables',
    { date: date(), time: z.string().describe('HH:MM'), people: z.number() },
    { table_free: z.string(), wait_minutes: z.number() },
    (next) => ({
      date: pickDate(next),
      time: clock(18 * 60 + 30 * between(0, 6, next())),
      people: between(1, 8, next()),
    }),
  ),
  task(
    'next_train',
    'The next train between two cities after a time.',
    'next_train',
    { from: z.string(), to: z.string(), after: z.string().describe('HH:MM') },
    { departure: z.string(), platform: z.number() },
    (next) => ({ ...twoCities(next), after: clock(6 * 60 + 5 * between(0, 180, next())) }),
  ),
  task(
    'movie_times',
    'When a film is screened on a date, and the seats left.',
    'showtimes',
    { film: z.string(), date: date() },
    { showtime: z.string(), seats_left: z.number() },
    (next) => ({ film: pickOf(FILMS, next()), date: pickDate(next) }),
  ),
  task(
    'temperature_check',
    'The temperature in a city on a date.',
    'get_forecast',
    { city: z.string(), date: date() },
    { temperature: z.number() },
    (next) => ({ city: pickOf(CITIES, next()), date: pickDate(next) }),
  ),
  task(
    'lift_pass_price',
    'The price of a lift pass for a number of days and an age group.',
    'lift_pass',
    { days: z.number(), age_group: z.string() },
    { pass_price: z.number() },
    (next) => ({ days: between(1, 7, next()), age_group: pickOf(['child', 'adult', 'senior'], next()) }),
  ),
  task(
    'convert_money',
    'An amount of money in another currency.',
    'convert_currency',
    { amount: z.number(), from: z.string(), to: z.string() },
    { converted: z.number() },
    (next) => {
      const from = pickOf(CURRENCIES, next());
      return {
        amount: pickOf([20, 50, 100, 250, 1000], next()),
        from,
        to: pickOf(
          CURRENCIES.filter((code) => code !== from),
          next(),
        ),
      };
    },
  ),
  task(
    'dish_of_the_day',
    "A restaurant's dish of the day for a course, and its price.",
    'restaurant_menu',
    { course: z.string() },
    { dish: z.string(), price: z.number() },
    (next) => ({ course: pickOf(COURSES, next()) }),
  ),
  task(
    'taxi_quote',
    'The fare and waiting time of a taxi ride.',
    'taxi_fare',
    { from: z.string(), to: z.string(), passengers: z.number() },
    { fare: z.number(), eta_minutes: z.number() },
    (next) => ({ ...twoCities(next), passengers: between(1, 6, next()) }),
  ),
  task(
    'ticket_price',
    'The price of a ticket for a film on a date.',
    'showtimes',
    { film: z.string(), date: date() },
    { ticket_price: z.number() },
    (next) => ({ film: pickOf(FILMS, next()), date: pickDate(next) }),
  ),
  task(
    'hotel_rating',
    "A hotel's guest score on one aspect, and how many reviews it rests on.",
    'hotel_reviews',
    { aspect: z.string() },
    { score: z.number(), review_count: z.number() },
    (next) => ({ aspect: pickOf(['cleanliness', 'breakfast', 'location', 'staff'], next()) }),
  ),
  task(
    'film_details',
    'How long a film runs and its age rating.',
    'film_info',
    { film: z.string() },
    { duration_minutes: z.number(), rating: z.string() },
    (next) => ({ film: pickOf(FILMS, next()) }),
  ),
  task(
    'room_check',
    'Whether a hotel has rooms free for a stay.',
    'hotel_rooms',
    { date: date(), nights: z.number(), guests: z.number() },
    { rooms_free: z.number() },
    (next) => ({ date: pickDate(next), nights: between(1, 7, next()), guests: between(1, 4, next()) }),
  ),
];

/** One scripted action: a user runs a task toward a service with an input. */
export type Action = { user: number; task: TaskSchema; service: Service; input: Input };

/** The right answer to an action, from the service's hidden table, cut to the fields the task asks for. */
export function expected(action: Action, seed: number): Record<string, unknown> {
  const answer = TOOLS[action.task.tool](action.service.name, seed).run(action.input as never, {} as never) as Record<
    string,
    unknown
  >;
  return Object.fromEntries(Object.keys(action.task.spec.output.shape).map((key) => [key, answer[key]]));
}

/** The shape of a network: how many users and services, actions, and the share of one-off actions. */
export type ScenarioOptions = { seed: number; users: number; services: number; actions: number; oneOffs?: number };

/**
 * The script. Each user has one to three habits (a task toward a service), drawn with a Zipf skew over the tasks
 * (weather forecasts often, film details rarely); most of its actions are its habits, the first most often, and a
 * share (`oneOffs`, default 5%) are one-off tasks toward any service that can answer them. Users act with a Zipf
 * skew too: a few are busy, many are occasional.
 */
export function script(options: ScenarioOptions): { services: Service[]; users: number; actions: Action[] } {
  const next = random(options.seed);
  // One service of each kind before a second of any: a small network still spans the domains.
  const kinds = [...new Set(SERVICES.map((service) => service.tools[0]))];
  const byKind = kinds.map((kind) => SERVICES.filter((service) => service.tools[0] === kind));
  const spread = Array.from({ length: 3 }, (_, round) => byKind.flatMap((group) => group[round] ?? []));
  const services = spread.flat().slice(0, options.services);
  const serving = (schema: TaskSchema) => services.filter((service) => service.tools.includes(schema.tool));
  const tasks = TASKS.filter((schema) => serving(schema).length > 0);
  const zipf = (count: number, exponent: number) => {
    const weights = Array.from({ length: count }, (_, rank) => 1 / (rank + 1) ** exponent);
    const total = weights.reduce((sum, weight) => sum + weight, 0);
    return () => {
      let draw = next() * total;
      for (const [index, weight] of weights.entries()) if ((draw -= weight) < 0) return index;
      return count - 1;
    };
  };
  const taskRank = zipf(tasks.length, 1);
  const habits = Array.from({ length: options.users }, () =>
    Array.from({ length: between(1, 3, next()) }, () => {
      const schema = tasks[taskRank()]!;
      return { task: schema, service: pickOf(serving(schema), next()) };
    }),
  );
  const userRank = zipf(options.users, 0.6);
  const habitRank = [0.7, 0.2, 0.1];
  const actions: Action[] = [];
  for (let index = 0; index < options.actions; index++) {
    const user = userRank();
    let choice = habits[user]![0]!;
    if (next() < (options.oneOffs ?? 0.05)) {
      const schema = pickOf(tasks, next());
      choice = { task: schema, service: pickOf(serving(schema), next()) };
    } else {
      const own = habits[user]!;
      let draw = next() * own.reduce((sum, _, rank) => sum + habitRank[rank]!, 0);
      for (const [rank, habit] of own.entries())
        if ((draw -= habitRank[rank]!) < 0 || rank === own.length - 1) {
          choice = habit;
          break;
        }
    }
    actions.push({ user, ...choice, input: choice.task.draw(next) });
  }
  return { services, users: options.users, actions };
}
