// Drives /v1/responses with the AI SDK's OpenAI provider, as a Node app would: `openai(id)`
// is a Responses model. A tool loop with streamText: the model calls current_time, the SDK
// runs it and sends the result back, and the model answers.
// Usage: node responses_with_ai_sdk.mjs BASE_URL MODEL PROMPT [reasoning]
// With "reasoning", asks for the reasoning as docs/openai.md says (the provider sends a
// reasoning summary only for models it knows think: forceReasoning tells it this one does).
// Prints one JSON line: {"text", "reasoning", "finishReason", "steps": [{"finishReason",
// "toolCalls", "toolResults", "text"}], "usage", "parts"} or {"error": message}.
import { createOpenAI } from "@ai-sdk/openai";
import { stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

const [baseURL, model, prompt, reasoning] = process.argv.slice(2);
const openai = createOpenAI({ baseURL, apiKey: "any key works without AUTH_TOKEN" });

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
    providerOptions: reasoning === "reasoning" ? { openai: { forceReasoning: true, reasoningSummary: "auto" } } : {},
    // The provider's defaults ask to store the response and to read encrypted reasoning;
    // sent as an app would send them.
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
    usage: await result.totalUsage, parts,
  }));
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.message ?? error) }));
}
