// `/wellknown` on the wire: the receiver's listing body served with an ETag (If-None-Match → 304) and its gzip and
// Brotli encodings, made once per listing rather than per request.
import { PreparedBody } from '../edge/prepared.js';
import type { EdgeRequest } from '../edge/request.js';
import { JSON_TYPE, respond, type EdgeResponse } from '../edge/response.js';
import type { ListingBody, ReceiverApi, RequestContext } from '../receiver.js';

/** The prepared body of each listing the receiver handed out: kept while the listing is (a new one per change). */
const prepared = new WeakMap<ListingBody, PreparedBody>();

/** A listing body ready to serve: its ETag and encodings made when first needed, then kept beside it. */
export function preparedListing(listing: ListingBody): PreparedBody {
  let body = prepared.get(listing);
  if (body === undefined) {
    body = new PreparedBody(listing.body, JSON_TYPE, listing.digest);
    prepared.set(listing, body);
  }
  return body;
}

/** The answer to `GET /wellknown` (or HEAD): the prepared listing when the receiver builds one, else serialized now. */
export async function wellknownResponse(
  receiver: ReceiverApi,
  request: Pick<EdgeRequest, 'headers' | 'method'>,
  context: RequestContext,
): Promise<EdgeResponse> {
  const listing = receiver.capabilities.listing;
  if (listing) return preparedListing(await listing.wellknownBody(context)).respond(request);
  return respond(200, JSON_TYPE, JSON.stringify(await receiver.wellknown(context)), request.method === 'HEAD');
}
