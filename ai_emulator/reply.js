// A generated reply, whatever its framing: its tokens, thoughts, tool calls and usage,
// drawn lazily from generators seeded by the conversation.

import { fnv1a, seededRandom } from "./random.js";
import { withNumberTokens } from "./quirks.js";
import { plannedToolCalls, toolCallsFor } from "./tools.js";
import { imageSentence } from "./images.js";
import { proseReply, textTokens, THOUGHTS, toolResultTokens, VOCABULARY } from "./prose.js";
import { jsonAnswer } from "./json_mode.js";

// A reply is drawn lazily from generators seeded by the conversation, so a 100,000-token
// benchmark reply costs the emulator no memory to speak of. In JSON mode (`output`,
// jsonMode) the answer is jsonAnswer's text instead, cut into tokens as prose is, its own
// length whatever AI_REPLY_TOKENS says, and cut short by max_tokens as prose is (finish
// "length", the JSON left unfinished, as a real model's would be); the "numbers" quirk
// leaves it alone (its fragment is no JSON).
// A vision model's reply opens with the images' sentence (`seen`, imagesSeen), then any
// tool result's quote; a JSON-mode json_object answer carries the sentence as "images".
const NO_TOOLS = { tools: [], choice: "auto", parallel: true };
const NO_QUIRKS = new Set();
const NO_IMAGES = [];

export function replyFor(inputs, settings, thinking = 0, cachedTokens = null, tooling = NO_TOOLS, quirks = NO_QUIRKS, output = null,
  seen = NO_IMAGES) {
  const messages = Array.isArray(inputs.messages) ? inputs.messages : [];
  const seed = fnv1a(JSON.stringify(messages));
  const tokenRandom = seededRandom(seed);
  const toolRandom = seededRandom(seed ^ 0x9e3779b9); // tool call ids, fragments, the quoted result
  const budget = Number.isInteger(inputs.max_tokens) && inputs.max_tokens > 0 ? inputs.max_tokens : Infinity;
  const reasoningCount = Math.min(thinking, budget);
  const planned = plannedToolCalls(tooling, messages);
  const toolCalls = planned.length > 0 ? toolCallsFor(planned, toolRandom, budget - reasoningCount) : null;
  const answersJson = output !== null && !toolCalls;
  const looked = seen.length > 0 ? textTokens(imageSentence(seen)) : [];
  const result = toolCalls || answersJson ? [] : toolResultTokens(messages, toolRandom);
  const prefix = toolCalls || answersJson ? [] : [...looked, ...(looked.length > 0 && result.length > 0 ? [" "] : []), ...result];
  const prose = settings.style === "prose" ? proseReply(messages, seed, prefix) : null;
  let prefixed = 0;
  const plainToken = prose?.nextToken
    ?? (() => (prefixed < prefix.length ? prefix[prefixed++] : VOCABULARY[Math.floor(tokenRandom() * VOCABULARY.length)]));
  const json = answersJson ? textTokens(jsonAnswer(output, messages, plainToken, toolRandom, seen)) : null;
  const wanted = json ? json.length : settings.replyTokens || (prose ? prose.length : 60 + Math.floor(tokenRandom() * 241));
  const count = toolCalls ? 0 : Math.min(prefix.length + wanted, budget - reasoningCount);
  const prompted = JSON.stringify(messages).length + (tooling.tools.length > 0 ? JSON.stringify(inputs.tools).length : 0);
  const promptTokens = Math.max(1, Math.ceil(prompted / 4));
  const completion = reasoningCount + (toolCalls ? toolCalls.spent : count);
  const usage = { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
  if (cachedTokens !== null) usage.prompt_tokens_details = { cached_tokens: cachedTokens };
  let sent = 0;
  const nextToken = json ? () => json[sent++] ?? "" : quirks.has("numbers") ? withNumberTokens(plainToken) : plainToken;
  const truncated = toolCalls ? toolCalls.cut : json ? json.length > count : completion >= budget;
  return {
    seed,
    count,
    reasoningCount,
    toolCalls: toolCalls?.calls ?? null,
    nextToken,
    json: json ? { complete: !truncated } : null,
    quirks,
    nextThought: prose?.nextThought ?? (() => THOUGHTS[Math.floor(tokenRandom() * THOUGHTS.length)]),
    random: seededRandom(seed ^ 0x5bd1e995), // padding and chunk boundaries
    usage,
    truncated,
    stamp: settings.stampTokens,
  };
}
