// Drives /v1/responses with the AI SDK's OpenAI provider, as a Node app would: `openai(id)`
// is a Responses model. A tool loop with streamText: the model calls current_time, the SDK
// runs it and sends the result back, and the model answers.
// Usage: node responses_with_ai_sdk.mjs BASE_URL MODEL PROMPT [reasoning | store-false | conversation=ID]
// With "reasoning", asks for the reasoning as docs/openai.md says (the provider sends a
// reasoning summary only for models it knows think: forceReasoning tells it this one does);
// with "store-false", sets the provider's `store: false`; with "conversation=ID", its
// `conversation` option. Else the provider's defaults.
// Prints one JSON line: {"text", "reasoning", "finishReason", "steps": [{"finishReason",
// "toolCalls", "toolResults", "text"}], "usage", "parts", "sent": [[each request's input
// item types], ...], "stores": [each request's store, or null]} or {"error": message, "sent"}.
import { createOpenAI } from "@ai-sdk/openai";
import { stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

const [baseURL, model, prompt, mode] = process.argv.slice(2);
// What the provider sent, read from each request's body, as an app cannot see it.
const sent = [];
const stores = [];
const recorded = async (url, init) => {
  const body = JSON.parse(init.body);
  sent.push(body.input.map((item) => item.type ?? "message"));
  stores.push(body.store ?? null);
  return fetch(url, init);
};
const openai = createOpenAI({ baseURL, apiKey: "any key works without AUTH_TOKEN", fetch: recorded });
const providerOptions = {
  reasoning: { openai: { forceReasoning: true, reasoningSummary: "auto" } },
  "store-false": { openai: { store: false } },
}[mode] ?? (mode?.startsWith("conversation=") ? { openai: { conversation: mode.slice("conversation=".length) } } : {});

const tools = {
  current_time: tool({
    description: "The current time in an IANA time zone.",
    inputSchema: z.object({ timezone: z.string() }),
    execute: async ({ timezone }) => `12:34 in ${timezone}`,
  }),
};

try {
  const parts = [];
  const result = streamText({
    model: openai(model),
    prompt,
    tools,
    stopWhen: stepCountIs(3),
    maxRetries: 0,
    providerOptions,
    // The provider's defaults: it sends no `store`, so OpenAI's default (stored) holds,
    // and refers to the items of earlier steps by id (item_reference).
    onError: () => {},
  });
  for await (const part of result.fullStream) {
    parts.push(part.type);
    if (part.type === "error") throw part.error;
  }
  const steps = (await result.steps).map((step) => ({
    finishReason: step.finishReason,
    toolCalls: step.toolCalls.map((call) => ({ toolName: call.toolName, input: call.input })),
    toolResults: step.toolResults.map((result) => result.output),
    text: step.text,
  }));
  console.log(JSON.stringify({
    text: await result.text, reasoning: await result.reasoningText, finishReason: await result.finishReason, steps,
    usage: await result.totalUsage, parts, sent, stores,
  }));
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.message ?? error), sent }));
}
