// Streams one /v1/messages request with the `@anthropic-ai/sdk` npm package and prints
// what it read as one JSON line: its events' types, the final message, or the error
// class it threw. Usage: node stream_with_anthropic_sdk.mjs <base url> <api key> <body JSON>
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, apiKey, body] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey, maxRetries: 0, timeout: 30_000 });
const out = { events: [], inputDeltas: [] };
try {
  const stream = client.messages.stream(JSON.parse(body));
  stream.on("inputJson", (partial) => out.inputDeltas.push(partial));
  for await (const event of stream) out.events.push(event.type);
  out.message = await stream.finalMessage();
} catch (error) {
  out.error = { class: error.constructor.name, status: error.status ?? null, type: error.error?.error?.type ?? null };
}
console.log(JSON.stringify(out));
