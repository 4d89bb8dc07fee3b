// Internal: how every entry's options merge over its defaults object, and the one default several layers share.

/** How long an idle conversation lives, ms: five minutes (spec §2; also the least a tombstone is kept). */
export const DEFAULT_CONVERSATION_TTL_MS = 300_000;

/** The options with every value left undefined taken from `defaults` (an explicit `0`, `false` or `null` is kept). */
export function withDefaults<Defaults extends object, Options extends object>(
  defaults: Defaults,
  options: Options,
): Omit<Options, keyof Defaults> & {
  [Key in keyof Defaults]: Exclude<Key extends keyof Options ? Options[Key] : never, undefined> | Defaults[Key];
} {
  const merged: Record<string, unknown> = { ...(defaults as Record<string, unknown>) };
  for (const [key, value] of Object.entries(options)) if (value !== undefined) merged[key] = value;
  return merged as never;
}
