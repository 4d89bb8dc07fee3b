// The `--roar-trust` file: a JSON object DID → hex Ed25519 public key, the only keys ROAR Ed25519 signatures
// are checked with. Read once at start; a bad file is one clear error, never a half-trusted set.
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { AgoraError } from '../../errors.js';

const TRUST_FILE_BYTES = 1024 * 1024;
const TrustSchema = z.record(
  z.string().regex(/^did:/, 'a DID (did:…)'),
  z.string().regex(/^[0-9a-fA-F]{64}$/, 'a 64-hex-character Ed25519 public key'),
);

/**
 * Parses a trust file's text into DID → hex key, or throws `INVALID_ARGUMENT` naming the file and the first problem.
 * @example parseTrust('{"did:roar:agent:peer-0123456789abcdef": "3b6a…"}', 'trust.json')
 */
export function parseTrust(text: string, name: string): Record<string, string> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new AgoraError('INVALID_ARGUMENT', `ROAR trust file ${name} is not JSON: ${(error as Error).message}`);
  }
  const parsed = TrustSchema.safeParse(value);
  if (!parsed.success)
    throw new AgoraError(
      'INVALID_ARGUMENT',
      `ROAR trust file ${name} must map DIDs to hex Ed25519 public keys: ${z.prettifyError(parsed.error).replace(/\n\s*/g, ' ')}`,
    );
  return parsed.data;
}

/** Reads and parses a trust file (at most 1 MiB). */
export async function readTrustFile(path: string): Promise<Record<string, string>> {
  let text: string;
  try {
    const bytes = await readFile(path);
    if (bytes.length > TRUST_FILE_BYTES)
      throw new AgoraError('INVALID_ARGUMENT', `ROAR trust file ${path} is larger than 1 MiB`);
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof AgoraError) throw error;
    throw new AgoraError(
      'INVALID_ARGUMENT',
      `ROAR trust file ${path} cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
  return parseTrust(text, path);
}
