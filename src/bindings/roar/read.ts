// Reading a ROAR message fast: JSON.parse whenever it keeps every number as Python would print it back (the
// canonical signing body is built from what was read), else the lossless reader. JSON.parse is native and several
// times faster; the lossless reader remains the reference, and gives the error text for malformed input.
import { nestingExceeds } from '../../schemas.js';
import { MAX_LOSSLESS_DEPTH, parseLossless, type LosslessValue } from './canonical.js';

// A JSON number token, whole: never preceded or followed by a word character, a dot, a quote or (before) a minus,
// so digits inside strings (hashes, DIDs) are not taken for numbers; every number JSON.parse reads matches.
const NUMBER_TOKEN = /(?<![\w."-])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w."])/g;
// Integers up to 15 digits are exact as doubles and print back digit for digit.
const MAX_EXACT_DIGITS = 15;

/**
 * Whether `JSON.parse(text)` loses nothing canonical JSON needs: no float with an integral value (`1.0`, `1e3`:
 * Python prints them as floats, JavaScript reads an integer) or out of range, no integer past 15 digits, nesting
 * within bounds. Anything else in a number (a fraction) prints back the same from the double, in both languages.
 */
export function parseKeepsNumbers(text: string): boolean {
  if (nestingExceeds(text, MAX_LOSSLESS_DEPTH)) return false;
  NUMBER_TOKEN.lastIndex = 0;
  for (let match = NUMBER_TOKEN.exec(text); match !== null; match = NUMBER_TOKEN.exec(text)) {
    const token = match[0];
    if (token.includes('.') || token.includes('e') || token.includes('E')) {
      // `1e400` reads as Infinity, which canonicalJson prints as null (Python prints Infinity).
      const value = Number(token);
      if (Number.isInteger(value) || !Number.isFinite(value)) return false;
    } else if (token.length > (token.charCodeAt(0) === 0x2d ? MAX_EXACT_DIGITS + 1 : MAX_EXACT_DIGITS)) return false;
  }
  return true;
}

/**
 * A ROAR message's JSON: `plain` when JSON.parse read it (plain JSON values, ordinary objects, numbers as
 * numbers), else as {@link parseLossless} reads it (numbers as RawNumber). Throws as parseLossless does.
 * `exactNumbers: false` (no signature will be checked) takes JSON.parse's reading whenever the text is JSON.
 */
export function readRoarJson(text: string, exactNumbers = true): { value: LosslessValue; plain: boolean } {
  // Without signatures to verify, no canonical body is built from what was read: JSON.parse's numbers do.
  if (!exactNumbers || parseKeepsNumbers(text)) {
    try {
      return { value: JSON.parse(text) as LosslessValue, plain: true };
    } catch {
      // Malformed: the lossless reader says where.
    }
  }
  return { value: parseLossless(text), plain: false };
}
