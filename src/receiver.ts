import type { FollowUpRequest, QueryRequest, SuccessResponse, Wellknown } from './schemas.js';

/** Who is asking, as the HTTP edge knows it (used for logs, rate limits and links). */
export type RequestContext = {
  /** The base URL the request reached, e.g. `http://127.0.0.1:3000/agora` (used when no public URL is set). */
  baseUrl?: string;
  /** The client's address. */
  remoteAddress?: string;
  signal?: AbortSignal;
};

/** What the HTTP edge needs from a receiver. Every method throws AgoraError on failure. */
export interface ReceiverApi {
  /** `POST /`: a new query. */
  query(request: QueryRequest, context?: RequestContext): Promise<SuccessResponse>;
  /** `POST /conversations/:id`: the next turn. */
  followUp(id: string, request: FollowUpRequest, context?: RequestContext): Promise<SuccessResponse>;
  /** `DELETE /conversations/:id`. */
  end(id: string): Promise<void>;
  /** `GET /wellknown`: hex hash → sources. */
  wellknown(context?: RequestContext): Promise<Wellknown>;
  /** `GET /protocols/:hash`: the exact text of a document this agent holds (hash already normalized to hex). */
  document(hash: string): Promise<string | undefined>;
  /** `GET /metrics`: Prometheus text. */
  metrics(): Promise<string>;
}
