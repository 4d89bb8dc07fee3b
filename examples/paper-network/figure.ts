// The figure: the cost per query of both runs (a moving average), as an SVG whose scales, axes' ticks and curves
// come from d3-scale and d3-shape.
import { scaleLinear, scaleLog } from 'd3-scale';
import { line } from 'd3-shape';

/** The moving average over `window` points (over fewer at the start, as the paper's figure does). */
export function movingAverage(values: number[], window: number): number[] {
  let sum = 0;
  return values.map((value, index) => {
    sum += value - (index >= window ? values[index - window]! : 0);
    return sum / Math.min(index + 1, window);
  });
}

/** One curve of the figure. */
export type Series = { label: string; color: string; values: number[] };

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** An SVG of the series against the query number, the y axis in dollars on a log scale (both runs stay readable). */
export function costFigure(series: Series[], options: { title: string; window: number }): string {
  const width = 760;
  const height = 420;
  const margin = { top: 48, right: 24, bottom: 48, left: 76 };
  const count = Math.max(...series.map((one) => one.values.length));
  const averaged = series.map((one) => movingAverage(one.values, options.window));
  // A window without any LLM call costs $0: drawn on the axis's floor, below the cheapest window that cost something.
  const positive = averaged.flat().filter((value) => value > 0);
  const x = scaleLinear()
    .domain([1, count])
    .range([margin.left, width - margin.right]);
  const y = scaleLog()
    .domain([Math.min(...positive) / 2, Math.max(...positive) * 1.5])
    .range([height - margin.bottom, margin.top])
    .nice();
  const floor = y.domain()[0]!;
  const path = line<number>()
    .x((_, index) => x(index + 1))
    .y((value) => y(Math.max(value, floor)));
  const xTicks = x
    .ticks(10)
    .map(
      (tick) =>
        `<g transform="translate(${x(tick).toFixed(1)},${height - margin.bottom})"><line y2="5" stroke="#555"/>` +
        `<text y="18" text-anchor="middle">${tick}</text></g>`,
    );
  const format = y.tickFormat(6, '$.2~r');
  const yTicks = y
    .ticks(6)
    .filter((tick) => format(tick) !== '')
    .map(
      (tick) =>
        `<g transform="translate(${margin.left},${y(tick).toFixed(1)})"><line x2="${width - margin.left - margin.right}" stroke="#ddd"/>` +
        `<text x="-8" dy="4" text-anchor="end">${escape(format(tick))}</text></g>`,
    );
  const curves = series.map(
    (one, index) => `<path d="${path(averaged[index]!)}" fill="none" stroke="${one.color}" stroke-width="2"/>`,
  );
  const legend = series.map(
    (one, index) =>
      `<g transform="translate(${width - margin.right - 260},${margin.top + 8 + 20 * index})"><line x2="24" stroke="${one.color}" stroke-width="3"/>` +
      `<text x="32" dy="4">${escape(one.label)}</text></g>`,
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15">${escape(options.title)}</text>`,
    ...yTicks,
    `<line x1="${margin.left}" x2="${width - margin.right}" y1="${height - margin.bottom}" y2="${height - margin.bottom}" stroke="#555"/>`,
    ...xTicks,
    `<text x="${width / 2}" y="${height - 10}" text-anchor="middle">query</text>`,
    `<text transform="translate(16,${height / 2}) rotate(-90)" text-anchor="middle">cost per query (USD, moving average over ${options.window}, log scale)</text>`,
    ...curves,
    ...legend,
    '</svg>',
    '',
  ].join('\n');
}
