// Starting and stopping OpenTelemetry's SDK for `agora serve`, `agora hub` and the CLI's clients: a tracer provider,
// the W3C propagator, async context, and an OTLP/HTTP exporter configured by OpenTelemetry's standard variables. The
// SDK is loaded only here, only when tracing is on.
import { context, propagation, trace } from '@opentelemetry/api';
import { installHint, missingPackages } from '../_optional.js';
import { enableTracing } from './tracing.js';

/** The variables that turn tracing on (either one): where spans are sent. */
export const TRACING_ENV = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] as const;

/** Options of {@link startTracing}. */
export type TracingOptions = {
  /** `service.name` when `OTEL_SERVICE_NAME` does not say (default `agora`). */
  serviceName?: string;
  /**
   * The environment the SDK reads (`OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
   * `OTEL_TRACES_SAMPLER`…); only the protocol and the service name are read here, the SDK reads the rest itself.
   */
  env?: Record<string, string | undefined>;
};

/** Running tracing: {@link RunningTracing.stop} sends the spans still buffered, then stops. */
export type RunningTracing = {
  /** The OTLP protocol spans are sent with (`http/protobuf` or `http/json`). */
  readonly protocol: 'http/protobuf' | 'http/json';
  /** Sends what is buffered now (bounded by the SDK's export timeout). */
  flush(): Promise<void>;
  /** Sends what is buffered, then stops; tracing is off after it. */
  stop(): Promise<void>;
};

/** Whether the environment asks for tracing (an OTLP endpoint is set), as OpenTelemetry's own SDKs decide. */
export function tracingRequested(env: Record<string, string | undefined>): boolean {
  return TRACING_ENV.some((name) => (env[name] ?? '').trim() !== '');
}

/** The OTLP protocol asked for: the traces' own variable, else the general one; OTLP's default is `http/protobuf`. */
export function otlpProtocol(env: Record<string, string | undefined>): RunningTracing['protocol'] {
  const asked = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  if (asked === 'http/protobuf' || asked === 'http/json') return asked;
  throw new Error(
    `OTLP protocol ${JSON.stringify(asked)} is not supported: set OTEL_EXPORTER_OTLP_PROTOCOL to http/protobuf ` +
      '(the default) or http/json (for grpc, send to an OpenTelemetry Collector over HTTP)',
  );
}

/** Where spans go: the traces' own endpoint as given, else `/v1/traces` under the general one, else OTLP's default. */
export function tracesUrl(env: Record<string, string | undefined>): string {
  const own = (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '').trim();
  if (own) return own;
  const base = (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim() || 'http://localhost:4318';
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

let running: RunningTracing | undefined;

/**
 * Starts OpenTelemetry's Node SDK: spans batched and sent by OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` (or the
 * traces' own endpoint), sampled as `OTEL_TRACES_SAMPLER` says (default: parent-based, always on), with the W3C trace
 * context propagated and carried across `await`s. Registers it globally and turns the framework's spans on. Once.
 * @example const tracing = await startTracing({ serviceName: 'agora-hub', env: process.env }); … await tracing.stop();
 */
export async function startTracing(options: TracingOptions = {}): Promise<RunningTracing> {
  if (running) return running;
  const env = options.env ?? {};
  const protocol = otlpProtocol(env);
  const exporterPackage =
    protocol === 'http/json' ? '@opentelemetry/exporter-trace-otlp-http' : '@opentelemetry/exporter-trace-otlp-proto';
  // Optional peer dependencies: not installed with agora-agents, named with the command that installs them.
  const missing = missingPackages(['@opentelemetry/sdk-trace-node', '@opentelemetry/resources', exporterPackage]);
  if (missing.length) throw new Error(installHint('Tracing', missing));
  const [{ NodeTracerProvider, BatchSpanProcessor }, resources, exporterModule] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/resources'),
    protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const serviceName = (env.OTEL_SERVICE_NAME ?? '').trim() || options.serviceName || 'agora';
  // The resource: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME as the SDK reads them, our name when unset.
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': serviceName }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new exporterModule.OTLPTraceExporter({ url: tracesUrl(env) }))],
  });
  provider.register();
  enableTracing(true);
  let stopped: Promise<void> | undefined;
  running = {
    protocol,
    flush: () => provider.forceFlush(),
    stop() {
      enableTracing(false);
      stopped ??= provider.shutdown().finally(() => {
        // The API's globals are let go, so tracing can start again (a test, an embedding application).
        trace.disable();
        propagation.disable();
        context.disable();
        running = undefined;
      });
      return stopped;
    },
  };
  return running;
}
