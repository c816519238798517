// Workers AI emulator: a Worker that the chat Worker reaches through a service binding
// named AI, so `env.AI.run(model, inputs, options)` crosses the same RPC boundary as the
// real binding. It answers with deterministic replies framed like Workers AI (readable
// markdown, or a test vocabulary: AI_STYLE), or replays a test script. It obeys the model
// catalog (src/chat/model/catalog.py, handed over as AI_CATALOG): an unknown or retired model
// fails to start with 5007 as the binding does, a paid-only one with 5035 on the Free plan,
// and each model streams in its own framing, thinking first where it thinks. Given
// `tools`, it validates them as the binding does (8001 for a model without tool calling, a
// malformed tool, `tool_choice` or `parallel_tool_calls`) and calls tools by a rule of its
// own (plannedToolCalls in tools.js: the tools whose name words the last user message
// mentions, or the one tool_choice names), streamed in the model's framing with the shapes
// of the 2026-02-17 Workers AI changelog and workers-ai-provider 4.0.0's fixtures; after a
// `tool` message the reply begins with "Tool result: " and that result's start. Given a
// `response_format`, it checks it against the model's json_mode as the binding does (8001,
// 5023 when streamed where JSON mode cannot stream, 5025 for a model without JSON mode:
// jsonMode in json_mode.js) and answers with JSON built from the schema (exampleValue in
// tools.js), a native model's whole answer carrying it as an object. A script's `busy_ms`
// makes the model busy: `rejectIfBusy` (run()'s options) then fails the call at once with
// 3040, else it waits.
// Given image_url parts, a model with `vision` begins its reply by naming each image's
// format and pixel size, read from the image's header ("I see a 3×2 PNG."); one without
// fails with 5006 "Bad input", and an image it cannot read with 5004 (imagesSeen in
// images.js). This module is the binding itself (run(), its settings, the model, the
// streams); each other concern is a module of this folder (docs/emulator.md, "Its modules").
// Settings arrive as [vars] written by the dev launcher:
//   AI_CATALOG            the catalog as JSON (required)
//   AI_FORMAT             "native" or "openai": every model streams that way (default: its own)
//   AI_STYLE              "prose" (default): readable markdown answers; "words": the VOCABULARY
//                         of prose.js, for tests and benchmarks
//   AI_PLAN               "paid" (default) or "free": the account's Workers plan
//   AI_TOKENS_PER_SECOND  pacing; "0" sends as fast as the consumer pulls (default 40)
//   AI_REPLY_TOKENS       force the reply length (default: 60-300, derived from the messages)
//   AI_FRAMES_PER_CHUNK   frames per network chunk when unpaced (default 3)
//   AI_STAMP_TOKENS       "1": each token is "<t=ms>", its send time (latency benchmarks)
//   AI_SCRIPT             a JSON test script (docs/emulator.md, "Scripted upstreams")
//   AI_QUIRKS             comma-separated upstream quirks the generated replies carry
//                         (REPLY_QUIRKS in quirks.js)
import { WorkerEntrypoint } from "cloudflare:workers";
import { InferenceUpstreamError, isPlainObject, sleep, stringOrNull } from "./common.js";
import { fnv1a } from "./random.js";
import { replyQuirks } from "./quirks.js";
import { toolSettings } from "./tools.js";
import { describeImages, imageParts, imagesSeen } from "./images.js";
import { describeResponseFormat, jsonMode } from "./json_mode.js";
import { replyFor } from "./reply.js";
import { generatedChunks, nativeToolCalls } from "./framings.js";
import { lastUserContent, scriptedChunks } from "./scripts.js";

// Reasoning tokens by effort, spent from the same max_tokens budget as the answer (so a
// thinking model can spend the whole budget thinking, as real ones do).
const REASONING_TOKENS = { none: 0, low: 8, medium: 24, high: 48, max: 64 };
const log = (record) => console.log(JSON.stringify(record));

// `ctx` is the run() call's: held (waitUntil) until the stream ends, fails or is cancelled.
// Without the hold, a cancel that comes after the consumer's request which made this call
// has ended (a Durable Object's first request, a request's waitUntil) often never reaches
// cancel() below: workerd abandons the stream mid-pull, so generation stops, but nothing
// logs it. Seen with the pinned workerd 1.20261117.1 (2026-12-01): bench/rpc_stream_cancel/
// in workerd alone (31-51 of 100 cancels arrived), and 41-63 of 100 resumable stops in
// tests/runtime/test_stops_under_load.py; with the hold, 100 of 100.
function streamFrom(chunks, context, ctx) {
  let pulls = 0;
  let bytes = 0;
  let settle;
  ctx.waitUntil(new Promise((resolve) => { settle = resolve; }));
  return new ReadableStream({
    async pull(controller) {
      try {
        const { value, done } = await chunks.next();
        if (done) {
          log({ event: "ai_upstream_finished", ...context, pulls, bytes });
          settle();
          controller.close();
          return;
        }
        pulls += 1;
        bytes += value.byteLength;
        controller.enqueue(value);
      } catch (error) {
        log({ event: "ai_upstream_errored", ...context, pulls, bytes });
        settle();
        controller.error(error);
      }
    },
    async cancel() {
      log({ event: "ai_upstream_cancelled", ...context, pulls, bytes });
      settle();
      await chunks.return();
    },
  }, { highWaterMark: 0 });
}

// How a stream crosses the RPC boundary. workerd pumps a JS-backed ReadableStream into RPC
// by awaiting its promises from C++ and reports every rejection there as an uncaught
// exception of this isolate: a stream errored with a scripted message would print that
// message (standing in for the provider's text) twice in the runtime's logs, out of reach of
// any handler, though the consumer only ever sees "ReadableStream received over RPC
// disconnected prematurely.". A native stream (an IdentityTransformStream the JS stream is
// piped into) fails the same way for the consumer with nothing reported, and the pipe's
// rejection is handled here. But its pump notices a consumer that left only at its next
// write, while a JS stream's pump cancels the source at once, even in a pause or a hang.
// So: native for scripts with an `error` step, the JS stream itself for everything else.
function canError(script) {
  return (script?.steps ?? []).some((step) => step.error !== undefined);
}

function nativeStream(source, ctx) {
  const { readable, writable } = new IdentityTransformStream();
  // Errors and cancels are logged by streamFrom; the pipe must outlive a consumer that left
  // during a pause, to reach its next write, see it fail and cancel the source.
  ctx.waitUntil(source.pipeTo(writable).catch(() => {}));
  return readable;
}

// The settings of this call: the Worker's vars, or, with AI_SCRIPT_URL, whatever that
// address serves now over them: `{"script": <script or null>, "settings": {<AI_* vars>}}`.
// The test harness serves one there per runtime, so one runtime replays test after test's
// script and emulator settings without a restart (tests/harness/pool.py).
async function currentVars(env) {
  if (!env.AI_SCRIPT_URL) return env;
  let served;
  try {
    const response = await fetch(env.AI_SCRIPT_URL);
    if (!response.ok) throw new Error(`answered ${response.status}`);
    served = await response.json();
  } catch (error) {
    served = error;
  }
  if (!isPlainObject(served) || !isPlainObject(served.settings) || !(served.script === null || isPlainObject(served.script))) {
    // Logged, not only thrown: a thrown start failure looks like a model that would not
    // start, which is what many tests expect. The harness fails any test that prints this.
    const reason = served instanceof Error ? served.message : 'not {"script": object or null, "settings": object}';
    log({ event: "ai_script_unavailable", url: env.AI_SCRIPT_URL, reason });
    throw new Error(`AI_SCRIPT_URL ${env.AI_SCRIPT_URL}: ${reason}`);
  }
  const script = served.script === null ? {} : { AI_SCRIPT: JSON.stringify(served.script) };
  return { AI_CATALOG: env.AI_CATALOG, ...served.settings, ...script };
}

function readSettings(env) {
  const script = env.AI_SCRIPT ? JSON.parse(env.AI_SCRIPT) : null;
  const format = env.AI_FORMAT || null;
  if (format !== null && format !== "native" && format !== "openai") throw new Error(`AI_FORMAT must be native or openai, got ${format}`);
  const style = env.AI_STYLE || "prose";
  if (style !== "prose" && style !== "words") throw new Error(`AI_STYLE must be prose or words, got ${style}`);
  if (!env.AI_CATALOG) throw new Error("AI_CATALOG is missing: start the emulator with devtools/dev.py");
  return {
    script,
    format,
    style,
    catalog: JSON.parse(env.AI_CATALOG),
    plan: env.AI_PLAN || "paid",
    tokensPerSecond: Number(env.AI_TOKENS_PER_SECOND ?? "40"),
    replyTokens: Number(env.AI_REPLY_TOKENS ?? "0"),
    framesPerChunk: Math.max(1, Number(env.AI_FRAMES_PER_CHUNK ?? "3")),
    stampTokens: env.AI_STAMP_TOKENS === "1",
    quirks: replyQuirks((env.AI_QUIRKS ?? "").split(",").map((name) => name.trim()).filter(Boolean), "AI_QUIRKS"),
  };
}

// The model a request reaches: the catalog's entry, following an alias of a retired one.
// Throws what the binding throws for a model it does not serve.
function resolveModel(model, settings) {
  const { models, retired } = settings.catalog;
  const alias = retired[model]?.aliased_to;
  const entry = models[alias ?? model];
  if (!entry) throw new InferenceUpstreamError(5007, `No such model ${model} or task`);
  if (entry.paid_only && settings.plan === "free") {
    throw new InferenceUpstreamError(5035, "This model requires a Workers Paid plan. See pricing for details.");
  }
  return entry;
}

// How many reasoning tokens this request gets, from the model's defaults and the inputs
// that steer them. Inputs outside the model's schema are refused with 8001, the code
// workers-ai-provider 3.1.6's notes report for an invalid tool_choice (not in Cloudflare's
// errors table, checked 2026-12-01); the token counts are the emulator's own choice.
function thinkingTokens(entry, inputs) {
  const reasoning = entry.reasoning;
  const effort = inputs.reasoning_effort;
  const kwargs = inputs.chat_template_kwargs;
  if (effort !== undefined && effort !== null && !(reasoning?.efforts ?? []).includes(effort)) {
    throw new InferenceUpstreamError(8001, "Invalid input");
  }
  if (kwargs !== undefined) {
    const allowed = reasoning?.switch ? [reasoning.switch, "clear_thinking"] : [];
    if (typeof kwargs !== "object" || kwargs === null || Object.keys(kwargs).some((key) => !allowed.includes(key))) {
      throw new InferenceUpstreamError(8001, "Invalid input");
    }
  }
  if (!reasoning?.field) return 0;
  const switched = kwargs?.[reasoning.switch];
  const on = typeof switched === "boolean" ? switched : reasoning.on_by_default;
  if (!on || effort === "none") return 0;
  return REASONING_TOKENS[effort ?? "medium"] ?? REASONING_TOKENS.medium;
}

// Prefix caching: an instance keeps the prompts it has seen, so a request that names the
// same session (x-session-affinity) and repeats an earlier prompt's first messages reads
// them from the cache, in whole blocks. Without the header a request may land anywhere:
// nothing cached. Bounded: the oldest sessions are forgotten first. The block size is the
// emulator's own: Cloudflare's prompt-caching page says only that inputs are cached in
// blocks (checked 2026-12-01).
const CACHE_BLOCK_TOKENS = 16;
const MAX_CACHED_SESSIONS = 512;
const sessions = new Map();

function cachedPromptTokens(session, messages) {
  if (!session) return 0;
  const digests = messages.map((message) => fnv1a(JSON.stringify(message)));
  const seen = sessions.get(session) ?? [];
  let tokens = 0;
  for (let i = 0; i < Math.min(seen.length, digests.length) && seen[i].digest === digests[i]; i++) tokens += seen[i].tokens;
  sessions.delete(session);
  sessions.set(session, digests.map((digest, i) => ({ digest, tokens: Math.ceil(JSON.stringify(messages[i]).length / 4) })));
  if (sessions.size > MAX_CACHED_SESSIONS) sessions.delete(sessions.keys().next().value);
  return Math.floor(tokens / CACHE_BLOCK_TOKENS) * CACHE_BLOCK_TOKENS;
}

// What reached the binding, for tests and people: the names of the inputs and options,
// the settings among them, the tools' names and the conversation's shape (each message's
// role, the ids and names of tool calls, the call a tool message answers), how many images
// it holds and their decoded bytes in all, never the messages' text or an image's bytes.
const SETTINGS_LOGGED = ["max_tokens", "temperature", "top_p", "frequency_penalty", "presence_penalty", "seed",
  "reasoning_effort", "chat_template_kwargs", "tool_choice", "parallel_tool_calls"];

function toolNames(tools) {
  if (!Array.isArray(tools)) return null;
  return tools.map((tool) => stringOrNull(isPlainObject(tool?.function) ? tool.function.name : tool?.name));
}

function history(messages) {
  if (!Array.isArray(messages)) return [];
  return messages.map((message) => {
    const entry = { role: stringOrNull(message?.role) };
    if (entry.role === "assistant" && Array.isArray(message.tool_calls)) {
      entry.tool_calls = message.tool_calls.map((call) => ({
        id: stringOrNull(call?.id), name: stringOrNull(call?.function?.name ?? call?.name),
      }));
    }
    if (entry.role === "tool") entry.tool_call_id = stringOrNull(message.tool_call_id);
    return entry;
  });
}

function describeCall(inputs, options, images) {
  const settings = {};
  for (const name of SETTINGS_LOGGED) if (inputs?.[name] !== undefined) settings[name] = inputs[name];
  const headers = options?.extraHeaders ?? {};
  const gateway = options?.gateway;
  return {
    inputs: Object.keys(inputs ?? {}).sort(),
    options: Object.keys(options ?? {}).sort(),
    settings,
    ...(inputs?.tools !== undefined ? { tools: toolNames(inputs.tools) } : {}),
    history: history(inputs?.messages),
    ...describeImages(images),
    session_affinity: headers["x-session-affinity"] ?? null,
    reject_if_busy: options?.rejectIfBusy === true,
    signal: options?.signal !== undefined && options?.signal !== null,
    ...(gateway ? { gateway: { id: gateway.id, skipCache: gateway.skipCache ?? false, metadata: gateway.metadata ?? {} } } : {}),
  };
}

// The log id of the most recent run through a gateway, as `env.AI.aiGatewayLogId` gives it.
// A method here, not a property: Python Workers wrap a service binding so that only its
// methods cross RPC (chat/stream/upstream.py reads either).
let lastGatewayLogId = null;

export default class WorkersAIEmulator extends WorkerEntrypoint {
  async aiGatewayLogId() {
    return lastGatewayLogId;
  }

  async run(model, inputs, options) {
    const settings = readSettings(await currentVars(this.env));
    const context = { model, call: crypto.randomUUID() };
    // A script may give some models, or some prompts (the last user message), a script of
    // their own: fallbacks, and whole fault matrices served by one runtime. A script with
    // `generate: true` answers with a generated reply instead of steps, carrying its own
    // `quirks` (AI_QUIRKS' when it names none), so one runtime serves both.
    const messages = Array.isArray(inputs?.messages) ? inputs.messages : [];
    const prompt = lastUserContent(messages);
    const script = settings.script?.models?.[model] ?? settings.script?.prompts?.[prompt] ?? settings.script;
    const generates = !script || script.generate === true;
    if (script?.generate === true && (script.steps ?? []).length > 0) throw new Error("a script that generates has no steps");
    if (script?.quirks !== undefined && !(script.generate === true && Array.isArray(script.quirks))) {
      throw new Error("a script's quirks are a list, in a script that generates");
    }
    const quirks = script?.quirks !== undefined ? replyQuirks(script.quirks, "script quirks") : settings.quirks;
    const images = imageParts(messages);
    const described = describeCall(inputs, options, images);
    let entry;
    try {
      entry = resolveModel(model, settings);
    } catch (error) {
      log({ event: "ai_run", ...context, ...described, refused: error.message.split(":")[0] });
      throw error;
    }
    const framing = settings.format ?? entry.framing;
    const aliased = entry.id !== model ? { aliased_to: entry.id } : {};
    lastGatewayLogId = options?.gateway ? `01${crypto.randomUUID().replaceAll("-", "").slice(0, 24).toUpperCase()}` : null;
    const gatewayLog = lastGatewayLogId ? { gateway_log_id: lastGatewayLogId } : {};
    const record = { event: "ai_run", ...context, ...aliased, ...described, ...describeResponseFormat(entry, inputs), ...gatewayLog,
      stream: Boolean(inputs?.stream), format: framing, scripted: !generates, ...(generates && quirks.size > 0 ? { quirks: [...quirks] } : {}) };
    let thinking, tooling, output, seen;
    try {
      thinking = thinkingTokens(entry, inputs ?? {});
      tooling = toolSettings(entry, inputs ?? {});
      output = jsonMode(entry, inputs ?? {});
      seen = imagesSeen(entry, images);
    } catch (error) {
      log({ ...record, refused: error.message.split(":")[0] });
      throw error;
    }
    // A busy model (the script's busy_ms): rejectIfBusy fails the call at once with 3040,
    // the HTTP 429 of developers.cloudflare.com/workers-ai/features/reject-if-busy/
    // (changelog 2026-09-17), thrown from the awaited run(); without it the request
    // queues for capacity, here for busy_ms.
    if (script?.busy_ms && options?.rejectIfBusy === true) {
      log({ ...record, rejected_busy: true });
      throw new InferenceUpstreamError(3040, "Capacity temporarily exceeded, please try again.");
    }
    log(record);
    const cached = entry.prompt_caching && framing === "openai" ? cachedPromptTokens(described.session_affinity, messages) : null;
    if (script?.busy_ms) await sleep(script.busy_ms);
    if (script?.start_delay_ms) await sleep(script.start_delay_ms);
    if (script?.fail_start) {
      log({ event: "ai_start_failed", ...context });
      throw new Error(script.fail_start);
    }
    const reply = { ...replyFor(inputs ?? {}, settings, framing === "openai" ? thinking : 0, cached, tooling, quirks, output, seen), settings };
    if (inputs?.stream) {
      const chunks = generates ? generatedChunks(reply, entry.id, framing, entry.reasoning?.field) : scriptedChunks(inputs, script, entry.id, this.env);
      const stream = streamFrom(chunks, context, this.ctx);
      return canError(script) ? nativeStream(stream, this.ctx) : stream;
    }
    let response = "";
    for (let i = 0; i < reply.count; i++) response += reply.nextToken();
    if (framing === "native") {
      if (reply.toolCalls) return { response: "", tool_calls: nativeToolCalls(reply), usage: reply.usage };
      // JSON mode: `response` is the parsed value, not the string the types promise
      // (workers-sdk issue #12398, open 2026-02). Cut short by max_tokens it parses as
      // nothing: then the text (the emulator's choice; no source says).
      return { response: reply.json?.complete ? JSON.parse(response) : response, usage: reply.usage };
    }
    let reasoning = "";
    for (let i = 0; i < reply.reasoningCount; i++) reasoning += reply.nextThought();
    const calls = reply.toolCalls?.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.fragments.join("") } }));
    const answer = calls?.length > 0 ? { content: null, tool_calls: calls } : { content: response };
    const message = { role: "assistant", ...answer, ...(reasoning ? { [entry.reasoning.field]: reasoning } : {}) };
    const finish = reply.truncated ? "length" : calls ? "tool_calls" : "stop";
    return {
      id: `chatcmpl-${reply.seed.toString(16)}`, object: "chat.completion", created: Math.floor(Date.now() / 1000), model: entry.id,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage: reply.usage,
    };
  }

  async fetch() {
    return new Response("Workers AI emulator: reach it through the AI service binding\n", { status: 404 });
  }
}
