// Tracing through OpenTelemetry's API: the spans the framework opens (a request, a turn, a routine's run, an LLM
// call, a hop), the W3C trace context read from requests and sent on outbound calls, and the switch that keeps all of
// it off the hot path while tracing is off. The SDK and its exporter are loaded only when tracing starts (setup.ts).
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { isAgoraError } from '../errors.js';

export { SpanKind, type Attributes, type Context, type Span };

/**
 * Whether the framework opens spans: false until tracing starts ({@link startTracing}, or {@link enableTracing} when
 * the application registered its own OpenTelemetry SDK). Read once per request; off, the hot path pays nothing more.
 */
export const TRACING = { on: false };

let tracer: Tracer | undefined;

/** The framework's tracer (named `agora-agents`). */
export function agoraTracer(): Tracer {
  tracer ??= trace.getTracer('agora-agents');
  return tracer;
}

/**
 * Turns the framework's spans on, with whatever OpenTelemetry SDK the application registered globally (its tracer
 * provider, propagator and context manager). `agora serve` and `agora hub` call {@link startTracing} instead.
 */
export function enableTracing(on = true): void {
  TRACING.on = on;
  tracer = undefined;
}

/** A carrier of headers as they come: node's incoming headers (lower-case names, a value or a list). */
export type HeaderCarrier = Record<string, string | string[] | undefined>;

const incomingGetter = {
  keys: (carrier: HeaderCarrier) => Object.keys(carrier),
  get: (carrier: HeaderCarrier, key: string) => carrier[key],
};

/** The trace context a request carries (`traceparent`, `tracestate`): the parent of the spans it starts. */
export function contextFrom(headers: HeaderCarrier): Context {
  return propagation.extract(ROOT_CONTEXT, headers, incomingGetter);
}

/** Adds the current trace context (`traceparent`, `tracestate`) to outgoing headers; nothing when tracing is off. */
export function injectContext(headers: Record<string, string>, parent: Context = context.active()): void {
  if (TRACING.on) propagation.inject(parent, headers);
}

/** The current trace and span ids, for a log record (`trace_id`, `span_id`); none outside a sampled span. */
export function traceFields(span: Span | undefined = trace.getActiveSpan()): { trace_id?: string; span_id?: string } {
  const ids = span?.spanContext();
  if (!ids || !trace.isSpanContextValid(ids)) return {};
  return { trace_id: ids.traceId, span_id: ids.spanId };
}

/** Marks a span failed with the error's code (an AgoraError's, else `INTERNAL`): never a message, a peer may have written it. */
export function spanFailed(
  span: Span,
  error: unknown,
  code: string = isAgoraError(error) ? error.code : 'INTERNAL',
): void {
  span.setAttribute('error.type', code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: code });
}

/** Options of a span the framework opens: its kind, attributes, parent (default: the current span), links. */
export type SpanOptions = { kind?: SpanKind; attributes?: Attributes; parent?: Context; links?: Link[] };

/** A span's W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), to keep with a record and link to later. */
export function traceparentOf(span: Span): string | undefined {
  const ids = span.spanContext();
  if (!trace.isSpanContextValid(ids)) return undefined;
  return `00-${ids.traceId}-${ids.spanId}-${(ids.traceFlags & 1).toString(16).padStart(2, '0')}`;
}

/** A link to the span a kept `traceparent` names (a resumed chain's first run); none when it names none. */
export function linkTo(traceparent: string | undefined): Link[] {
  if (!traceparent) return [];
  const ids = trace.getSpanContext(contextFrom({ traceparent }));
  return ids && trace.isSpanContextValid(ids) ? [{ context: ids }] : [];
}

/**
 * Runs `work` inside a new span (the current span its parent), ends it when `work` settles, and marks it failed when
 * `work` throws. Call only when {@link TRACING} is on (the caller checks, so the hot path stays free of closures).
 * @example const reply = TRACING.on ? await inSpan('agora.hop', {}, () => hop()) : await hop();
 */
export function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T> | T): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = agoraTracer().startSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes ? { attributes: options.attributes } : {}),
      ...(options.links?.length ? { links: options.links } : {}),
    },
    parent,
  );
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await work(span);
    } catch (error) {
      spanFailed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** A context with `span` as its current span. */
export function setSpan(parent: Context, span: Span): Context {
  return trace.setSpan(parent, span);
}

/** Runs `work` with `span` as the current span (its children's parent). */
export function withSpan<T>(span: Span, work: () => T): T {
  return context.with(trace.setSpan(context.active(), span), work);
}

/** The context now current: to carry into work started later (a queued job, a timer). */
export function currentContext(): Context {
  return context.active();
}

/** Runs `work` in a context taken earlier. */
export function inContext<T>(parent: Context, work: () => T): T {
  return context.with(parent, work);
}
