/**
 * A fetch double whose every reply is a JSON body without end: it counts what the caller pulled, so a test can
 * check that a peer's body is read up to a cap and never buffered whole.
 */
export function endlessFetch(): { fetch: typeof globalThis.fetch; pulled(): number; reset(): void } {
  let pulled = 0;
  const endless: typeof globalThis.fetch = async () =>
    new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled += 64 * 1024;
          controller.enqueue(new Uint8Array(64 * 1024).fill(0x20));
        },
      }),
      { status: 200, headers: { 'content-type': 'application/json' } },
    );
  return { fetch: endless, pulled: () => pulled, reset: () => (pulled = 0) };
}
