import { defineTool, z } from 'agora-agents';

type Dimension = 'length' | 'mass' | 'volume';

// Factors to the base unit of each dimension (metre, kilogram, litre).
const FACTORS: Record<string, [Dimension, number]> = {
  m: ['length', 1],
  km: ['length', 1000],
  cm: ['length', 0.01],
  mm: ['length', 0.001],
  mi: ['length', 1609.344],
  yd: ['length', 0.9144],
  ft: ['length', 0.3048],
  in: ['length', 0.0254],
  kg: ['mass', 1],
  g: ['mass', 0.001],
  lb: ['mass', 0.45359237],
  oz: ['mass', 0.028349523125],
  l: ['volume', 1],
  ml: ['volume', 0.001],
  gal: ['volume', 3.785411784],
};

const TEMPERATURES = new Set(['C', 'F', 'K']);

function toKelvin(value: number, unit: string): number {
  if (unit === 'C') return value + 273.15;
  if (unit === 'F') return (value - 32) * (5 / 9) + 273.15;
  return value;
}

function fromKelvin(value: number, unit: string): number {
  if (unit === 'C') return value - 273.15;
  if (unit === 'F') return (value - 273.15) * (9 / 5) + 32;
  return value;
}

/** Converts a value between two units; throws on unknown or incompatible units. */
export function convert(value: number, from: string, to: string): number {
  if (TEMPERATURES.has(from) && TEMPERATURES.has(to))
    return Number(fromKelvin(toKelvin(value, from), to).toPrecision(6));
  const source = FACTORS[from];
  const target = FACTORS[to];
  if (!source || !target || source[0] !== target[0]) throw new Error('Incompatible units');
  return Number(((value * source[1]) / target[1]).toPrecision(6));
}

export default defineTool({
  name: 'convert_units',
  description:
    'Convert a number between units of length (m km cm mm mi yd ft in), mass (kg g lb oz), temperature (C F K) or volume (l ml gal).',
  input: z.object({ value: z.number(), from: z.string(), to: z.string() }),
  run: ({ value, from, to }) => ({ value: convert(value, from, to), unit: to }),
});
