// The SSRF guard lives with the one outbound client (src/net/guard.ts); this path keeps its importers working.
export { ForbiddenAddressError, guardedFetch, type GuardOptions as GuardedFetchOptions } from '../net/guard.js';
