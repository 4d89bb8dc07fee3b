// Internal: the response shapes every route and adapter answers with.

/** A response as the core answers it; `headers` include `content-type` and `content-length`. */
export type CoreResponse = { status: number; headers: Record<string, string>; body: string };

/** The content type of every JSON answer. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** A response with its length computed; `headOnly` keeps the headers and drops the body (HEAD). */
export function respond(status: number, contentType: string, body: string, headOnly = false): CoreResponse {
  return {
    status,
    headers: { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) },
    body: headOnly ? '' : body,
  };
}

/** An Agora failure (spec §2): `{"status":"failure","error":message}`. */
export function failure(status: number, message: string): CoreResponse {
  return respond(status, JSON_TYPE, JSON.stringify({ status: 'failure', error: message }));
}
