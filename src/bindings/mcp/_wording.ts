// How `agora mcp` words a remote agent's failures for a host (and the LLM behind it): which agent, what it answered,
// never an HTTP status that says nothing (an Agora refusal comes with 200). A peer's own text is shown bounded and
// stripped of control characters, so a hostile agent cannot flood a host's log or forge lines in it.

/** Longest excerpt of a peer's text shown in a failure. */
export const MAX_PEER_TEXT = 200;

/** A peer's text fit to show: control characters and runs of blanks as one space, at most `max` characters. */
export function peerText(text: string, max = MAX_PEER_TEXT): string {
  const flat = text
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** A duration in seconds as people write it (`30 s`, `0.5 s`). */
export function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/** Where an agent is, as a failure names it: the URL without credentials, query or fragment. */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return peerText(url, 100);
  }
}
