// Internal: counts in words, for the lines people read (`1 query`, `2 queries`, never `1 queries` or `1 round(s)`).

/**
 * A count and its noun, singular for exactly 1.
 * @example plural(1, 'query', 'queries') // '1 query'
 */
export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : pluralForm}`;
}
