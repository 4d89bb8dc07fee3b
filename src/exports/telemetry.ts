// `agora-agents/telemetry`: OpenTelemetry tracing. The framework opens its spans through OpenTelemetry's API once
// tracing is on: started here (the Node SDK and an OTLP/HTTP exporter, loaded only then), or switched on over an SDK
// the application registered itself.
export {
  otlpProtocol,
  startTracing,
  tracesUrl,
  tracingRequested,
  TRACING_ENV,
  type RunningTracing,
  type TracingOptions,
} from '../telemetry/setup.js';
export { enableTracing, injectContext, contextFrom, traceFields, TRACING } from '../telemetry/tracing.js';
