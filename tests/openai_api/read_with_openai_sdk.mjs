// Reads /v1/chat/completions with the real `openai` npm package, as a Node app would.
// Usage: node read_with_openai_sdk.mjs BASE_URL API_KEY 'JSON request body'
// Prints one JSON line: {"text", "roles", "finishReasons", "usage", "requestId"} for a
// completed stream, or {"error": {"class", "status", "code", "param", "type", "requestId"}}.
import OpenAI from "openai";

const [baseURL, apiKey, bodyJson] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 30_000 });
const body = JSON.parse(bodyJson);

try {
  const { data: stream, request_id: requestId } = await client.chat.completions.create(body).withResponse();
  let text = "";
  const roles = [];
  const finishReasons = [];
  let usage = null;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      if (choice.delta.role) roles.push(choice.delta.role);
      text += choice.delta.content ?? "";
      if (choice.finish_reason) finishReasons.push(choice.finish_reason);
    }
    if (chunk.usage) usage = chunk.usage;
  }
  console.log(JSON.stringify({ text, roles, finishReasons, usage, requestId }));
} catch (error) {
  console.log(JSON.stringify({
    error: {
      class: error.constructor.name,
      status: error.status ?? null,
      code: error.code ?? null,
      param: error.param ?? null,
      type: error.type ?? null,
      requestId: error.requestID ?? null,
    },
  }));
}
