// Framings: a generated reply as Workers AI's native frames or as OpenAI-style
// chat.completion.chunks, and those frames as network chunks, paced or not.

import { encoder, sleep } from "./common.js";
import { errorPayload, FINISH_ALIASES, RAW, rawJson, sentAsNumber } from "./quirks.js";

function padding(random) {
  const length = Math.floor(random() * 24);
  let text = "";
  for (let i = 0; i < length; i++) text += String.fromCharCode(97 + Math.floor(random() * 26));
  return text;
}

// Native tool calls come whole, in one frame, with their arguments as an object (the
// models' output schema: tool_calls [{name, arguments}]); native streams carry no
// finish_reason. A call the budget cut short is left out.
export const nativeToolCalls = (reply) => reply.toolCalls.filter((call) => call.complete)
  .map((call) => ({ name: call.name, arguments: JSON.parse(call.json) }));

function* nativeFrames(reply) {
  const failsMidway = reply.quirks.has("error_midway");
  if (reply.toolCalls) {
    if (failsMidway) { // half of one whole frame is none of it
      yield errorPayload({});
      return;
    }
    const calls = nativeToolCalls(reply);
    if (calls.length > 0) yield { response: "", tool_calls: calls, p: padding(reply.random) };
  }
  for (let i = 0; i < reply.count; i++) {
    if (failsMidway && i === Math.floor(reply.count / 2)) break;
    const token = reply.nextToken();
    // Latency probes: the token carries its own send time (the clock the client reads).
    const frame = { response: reply.stamp ? `<t=${Date.now()}>` : token, p: padding(reply.random) };
    yield sentAsNumber(reply, frame.response) ? rawJson({ ...frame, response: RAW }, token) : frame;
  }
  if (failsMidway) {
    yield errorPayload({});
    return;
  }
  yield { response: "", usage: reply.usage };
}

// OpenAI-style chunks as the binding streams them for vLLM-served models (the shapes of
// workers-ai-provider's fixtures and the 2026-02-17 changelog): id, created and model on
// every chunk; the role first; reasoning deltas before the answer, in the model's own
// field; running usage on every chunk; finish_reason only on the usage chunk; a last
// chunk with no choices; then [DONE] (added by the caller). Tool calls: per call a chunk
// with its index, id, type and name (arguments ""), then its arguments in fragments of
// 1-8 characters under the same index; finish_reason "tool_calls" on an empty delta.
function* openaiFrames(reply, model, reasoningField) {
  const id = `chatcmpl-${reply.seed.toString(16)}`;
  const created = Math.floor(Date.now() / 1000);
  const { prompt_tokens: prompt, prompt_tokens_details: details } = reply.usage;
  const usageAfter = (completion) => ({
    prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion,
    ...(details ? { prompt_tokens_details: details } : {}),
  });
  const chunk = (delta, completion, finish = null) => ({
    id, object: "chat.completion.chunk", created, model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, ...(finish ? { stop_reason: null } : {}) }],
    usage: usageAfter(completion),
  });
  yield chunk({ role: "assistant", content: "" }, 0);
  let completion = 0;
  for (let i = 0; i < reply.reasoningCount; i++) yield chunk({ [reasoningField]: reply.nextThought() }, ++completion);
  const failsMidway = reply.quirks.has("error_midway");
  const finish = (reason) => (reply.quirks.has("finish_alias") ? FINISH_ALIASES[reason] ?? reason : reason);
  if (reply.toolCalls) {
    const fragments = reply.toolCalls.reduce((total, call) => total + call.fragments.length, 0);
    let sent = 0;
    for (const [index, call] of reply.toolCalls.entries()) {
      yield chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }, completion);
      for (const fragment of call.fragments) {
        if (failsMidway && sent++ === Math.floor(fragments / 2)) {
          yield errorPayload({});
          return;
        }
        yield chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }, ++completion);
      }
    }
    if (failsMidway) {
      yield errorPayload({});
      return;
    }
    yield chunk({}, completion, finish(reply.truncated ? "length" : "tool_calls"));
    yield { id, object: "chat.completion.chunk", created, model, choices: [], usage: usageAfter(completion) };
    return;
  }
  for (let i = 0; i < reply.count; i++) {
    if (failsMidway && i === Math.floor(reply.count / 2)) break;
    const token = reply.stamp ? `<t=${Date.now()}>` : reply.nextToken();
    completion += 1;
    yield sentAsNumber(reply, token) ? rawJson(chunk({ content: RAW }, completion), token) : chunk({ content: token }, completion);
  }
  if (failsMidway) {
    yield errorPayload({});
    return;
  }
  yield chunk({ content: "" }, completion, finish(reply.truncated ? "length" : "stop"));
  yield { id, object: "chat.completion.chunk", created, model, choices: [], usage: usageAfter(completion) };
}

export const sseFrame = (payload) => encoder.encode(`data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`);

// The generated reply as network chunks. Paced: one tick per token, each sending a random
// share of what is pending, so boundaries fall inside frames and inside characters.
// Unpaced (benchmarks): about AI_FRAMES_PER_CHUNK frames a chunk, cut at random points.
export async function* generatedChunks(reply, model, framing, reasoningField) {
  const settings = reply.settings;
  const frames = framing === "openai" ? openaiFrames(reply, model, reasoningField) : nativeFrames(reply);
  const interval = settings.tokensPerSecond > 0 ? 1000 / settings.tokensPerSecond : 0;
  const perTick = interval ? 1 : settings.framesPerChunk;
  let pending = new Uint8Array(0);
  let finished = false;
  for (let tick = 0; !finished; tick++) {
    const encoded = [];
    while (encoded.length < perTick) {
      const next = frames.next();
      if (next.done) {
        encoded.push(sseFrame("[DONE]"));
        finished = true;
        break;
      }
      encoded.push(sseFrame(next.value));
    }
    const size = encoded.reduce((total, frame) => total + frame.length, pending.length);
    const joined = new Uint8Array(size);
    joined.set(pending);
    let offset = pending.length;
    for (const frame of encoded) {
      joined.set(frame, offset);
      offset += frame.length;
    }
    const cut = finished ? joined.length : Math.max(1, Math.floor(joined.length * (0.4 + reply.random() * 0.6)));
    pending = joined.slice(cut);
    if (interval && tick > 0) await sleep(interval);
    yield joined.subarray(0, cut);
  }
}
