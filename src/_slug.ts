// Internal: the one slug function (file names of documents and routines, memory keys of tasks).

/** Options of {@link slug}. */
export type SlugOptions = {
  /** Longest slug kept (default 60); a cut never leaves a trailing separator. */
  maxLength?: number;
  /** What an empty slug becomes (default `item`). */
  fallback?: string;
  /** Keep `.` and `_` as they are (memory keys) instead of turning them into `-` (file names). Default false. */
  keepDots?: boolean;
};

/** Lowercase ASCII words joined by `-`: accents dropped, everything else a separator. */
export function slug(text: string, options: SlugOptions = {}): string {
  const separators = options.keepDots ? /[^a-z0-9._]+/g : /[^a-z0-9]+/g;
  const edges = options.keepDots ? /^[-.]+|[-.]+$/g : /^-+|-+$/g;
  const value = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(separators, '-')
    .replace(edges, '')
    .slice(0, options.maxLength ?? 60)
    .replace(options.keepDots ? /[-.]+$/ : /-+$/, '');
  return value || (options.fallback ?? 'item');
}
