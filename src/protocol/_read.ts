// Internal: reading a protocol file once it is whole (settled), through one descriptor, and telling a transient
// failure from a file that is no document.
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';

/** What a read found: the bytes, or that the file changed under the read (a writer is still at work). */
export type FileRead = { info: Stats; raw: Buffer; changed: boolean };

function sameFile(before: Stats, after: Stats): boolean {
  return before.size === after.size && before.mtimeMs === after.mtimeMs;
}

/**
 * Stats a file and reads it when `wanted` says so, through one descriptor: a path lookup fewer than a stat and a
 * `readFileSync`, which counts on the start-up path of an agent with many documents. `changed` when the file's size
 * or modification time moved during the read.
 */
export function statAndReadSync(file: string, wanted: (info: Stats) => boolean): FileRead | undefined {
  // Non-blocking, so a FIFO named `*.md` cannot hang the start (it is then skipped as no regular file).
  const descriptor = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const info = fstatSync(descriptor);
    if (!wanted(info)) return undefined;
    const raw = Buffer.allocUnsafe(info.size);
    let length = 0;
    while (length < raw.length) {
      const read = readSync(descriptor, raw, length, raw.length - length, length);
      if (read === 0) break;
      length += read;
    }
    const changed = length !== raw.length || !sameFile(info, fstatSync(descriptor));
    return { info, raw: length === raw.length ? raw : raw.subarray(0, length), changed };
  } finally {
    closeSync(descriptor);
  }
}

/** Errors that say "not now" rather than "not a document": out of descriptors or memory, or interrupted. */
const TRANSIENT = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EWOULDBLOCK', 'EBUSY', 'EINTR', 'ENOMEM', 'ETIMEDOUT']);

/** Whether a failed read should be tried again later, the document kept meanwhile. */
export function isTransient(error: unknown): boolean {
  return TRANSIENT.has((error as NodeJS.ErrnoException | undefined)?.code ?? '');
}
