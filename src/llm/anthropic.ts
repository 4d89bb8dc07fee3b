// The import path of the Anthropic model before providers had folders, kept so code written against it (the
// benchmarks, users' deep imports) still compiles. New code imports `./anthropic/model.js` or `./choose.js`.
export { AnthropicModel, DEFAULT_MODEL, type AnthropicModelOptions } from './anthropic/model.js';
export { hasAnthropicKey, modelFromEnvironment } from './choose.js';
