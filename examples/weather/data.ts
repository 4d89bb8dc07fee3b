// The hidden table of the weather examples: a deterministic forecast per (city, date), derived from a hash.
// Only the weather agent's tool (agent/tools/get-forecast.ts) and the checks read it: the LLM (real or the fake
// brain) learns a forecast only by calling the tool, and routines only through `context.tools`.
import { createHash } from 'node:crypto';

/** The cities the weather agent knows; any other is an "Unsupported location". */
export const CITIES = ['Paris', 'London', 'Tokyo', 'Nairobi', 'Lima', 'Oslo', 'Cairo', 'Sydney', 'Montreal', 'Mumbai'];

/** Ten days of forecasts the examples ask about (any YYYY-MM-DD date has one). */
export const DATES = Array.from({ length: 10 }, (_, day) => `2025-06-${String(day + 1).padStart(2, '0')}`);

const WEATHER = ['sunny', 'cloudy', 'windy', 'foggy', 'rainy', 'stormy', 'snowy'] as const;
// Where the chance of precipitation starts for each kind of weather.
const BASE: Record<(typeof WEATHER)[number], number> = {
  sunny: 0,
  cloudy: 20,
  windy: 10,
  foggy: 15,
  rainy: 60,
  stormy: 70,
  snowy: 50,
};

/** A forecast: the weather, and the chance of precipitation in % (0..100). */
export type Forecast = { weather: string; precipitation: number };

/** The forecast for a city on a date; throws "Unsupported location" or "Invalid date". */
export function forecast(city: string, date: string): Forecast {
  if (!CITIES.includes(city)) throw new Error('Unsupported location');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error('Invalid date');
  const digest = createHash('sha1').update(`${city}|${date}`).digest();
  const weather = WEATHER[digest[0]! % WEATHER.length]!;
  return { weather, precipitation: BASE[weather] + (digest[1]! % 30) };
}

/** The i-th query of a run: every city on every date (100 pairs), consecutive queries on different cities. */
export function weatherQuery(index: number): { city: string; date: string } {
  const cycle = index % (CITIES.length * DATES.length);
  return { city: CITIES[cycle % CITIES.length]!, date: DATES[Math.floor(cycle / CITIES.length)]! };
}
