// The hooks of ./import-recorder.mjs (they run on their own thread): each resolved URL is posted back.
let port;

export function initialize(data) {
  port = data.port;
}

export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  port.postMessage(result.url);
  return result;
}
