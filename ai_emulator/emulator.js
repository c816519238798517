// Workers AI emulator: a Worker that the chat Worker reaches through a service binding
// named AI, so `env.AI.run(model, inputs, options)` crosses the same RPC boundary as the
// real binding. It answers with deterministic replies framed like Workers AI, or replays
// a test script. Settings arrive as [vars] written by the dev launcher:
//   AI_FORMAT             "native" (default) or "openai"
//   AI_TOKENS_PER_SECOND  pacing; "0" sends as fast as the consumer pulls (default 40)
//   AI_REPLY_TOKENS       force the reply length (default: 60-300, derived from the messages)
//   AI_FRAMES_PER_CHUNK   frames per network chunk when unpaced (default 3)
//   AI_STAMP_TOKENS       "1": each token is "<t=ms>", its send time (latency benchmarks)
//   AI_SCRIPT             a JSON test script (see README: "Scripted upstreams")
import { WorkerEntrypoint } from "cloudflare:workers";

const encoder = new TextEncoder();

// Words chosen so replies contain multi-byte UTF-8 (2, 3 and 4 bytes) that network
// chunking will split, plus punctuation and newlines that re-framing must keep intact.
const VOCABULARY = [
  " the", " stream", " token", " worker", " model", " answer", " quickly", " arrives",
  " café", " naïve", " Größe", " déjà", " vu", " 東京", " 日本語", " 🚀", " 🙂", " —",
  ",", ".", "\n", " \"quoted\"", " back\\slash", " tab\there", " data:", " [DONE]", " <b>",
];

function fnv1a(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

// mulberry32: a tiny seeded generator, so the same conversation gives the same reply.
function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (record) => console.log(JSON.stringify(record));

function lastUserContent(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i] && messages[i].role === "user") return String(messages[i].content ?? "");
  }
  return "";
}

// A reply is drawn lazily from generators seeded by the conversation, so a 100,000-token
// benchmark reply costs the emulator no memory to speak of.
function replyFor(inputs, settings) {
  const messages = Array.isArray(inputs.messages) ? inputs.messages : [];
  const seed = fnv1a(JSON.stringify(messages));
  const tokenRandom = seededRandom(seed);
  let count = settings.replyTokens || 60 + Math.floor(tokenRandom() * 241);
  if (Number.isInteger(inputs.max_tokens) && inputs.max_tokens > 0) count = Math.min(count, inputs.max_tokens);
  const promptTokens = Math.max(1, Math.ceil(JSON.stringify(messages).length / 4));
  return {
    seed,
    count,
    nextToken: () => VOCABULARY[Math.floor(tokenRandom() * VOCABULARY.length)],
    random: seededRandom(seed ^ 0x5bd1e995), // padding and chunk boundaries
    usage: { prompt_tokens: promptTokens, completion_tokens: count, total_tokens: promptTokens + count },
    truncated: count === inputs.max_tokens,
    stamp: settings.stampTokens,
  };
}

function padding(random) {
  const length = Math.floor(random() * 24);
  let text = "";
  for (let i = 0; i < length; i++) text += String.fromCharCode(97 + Math.floor(random() * 26));
  return text;
}

function* nativeFrames(reply) {
  for (let i = 0; i < reply.count; i++) {
    const token = reply.nextToken();
    // Latency probes: the token carries its own send time (the clock the client reads).
    yield { response: reply.stamp ? `<t=${Date.now()}>` : token, p: padding(reply.random) };
  }
  yield { response: "", usage: reply.usage };
}

function* openaiFrames(reply, model) {
  const id = `chatcmpl-${reply.seed.toString(16)}`;
  const chunk = (choices, extra = {}) => ({ id, object: "chat.completion.chunk", created: 1764000000, model, choices, ...extra });
  for (let i = 0; i < reply.count; i++) {
    const content = reply.nextToken();
    yield chunk([{ index: 0, delta: i === 0 ? { role: "assistant", content } : { content }, finish_reason: null }]);
  }
  yield chunk([{ index: 0, delta: {}, finish_reason: reply.truncated ? "length" : "stop" }]);
  yield chunk([], { usage: reply.usage });
}

const sseFrame = (payload) => encoder.encode(`data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`);

// The generated reply as network chunks. Paced: one tick per token, each sending a random
// share of what is pending, so boundaries fall inside frames and inside characters.
// Unpaced (benchmarks): about AI_FRAMES_PER_CHUNK frames a chunk, cut at random points.
async function* generatedChunks(inputs, model, settings) {
  const reply = replyFor(inputs, settings);
  const frames = settings.format === "openai" ? openaiFrames(reply, model) : nativeFrames(reply);
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

function base64Bytes(text) {
  const binary = atob(text);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

class ScriptedStreamError extends Error {}

async function* scriptedChunks(inputs, script) {
  for (const step of script.steps ?? []) {
    if (step.sleep_ms !== undefined) await sleep(step.sleep_ms);
    else if (step.send_b64 !== undefined) yield base64Bytes(step.send_b64);
    else if (step.repeat !== undefined) for (let i = 0; i < step.repeat; i++) yield encoder.encode(step.send);
    else if (step.send !== undefined) yield encoder.encode(step.send);
    else if (step.echo) yield sseFrame({ response: lastUserContent(inputs.messages ?? []), p: "" });
    else if (step.error !== undefined) throw new ScriptedStreamError(step.error);
    else if (step.hang) for (;;) await sleep(60_000); // a timer stays pending: workerd would cancel a bare never-resolving promise
    else throw new Error(`unknown script step: ${JSON.stringify(step)}`);
  }
}

function streamFrom(chunks, context) {
  let pulls = 0;
  let bytes = 0;
  return new ReadableStream({
    async pull(controller) {
      try {
        const { value, done } = await chunks.next();
        if (done) {
          log({ event: "ai_upstream_finished", ...context, pulls, bytes });
          controller.close();
          return;
        }
        pulls += 1;
        bytes += value.byteLength;
        controller.enqueue(value);
      } catch (error) {
        log({ event: "ai_upstream_errored", ...context, pulls, bytes });
        controller.error(error);
      }
    },
    async cancel() {
      log({ event: "ai_upstream_cancelled", ...context, pulls, bytes });
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

function readSettings(env) {
  const script = env.AI_SCRIPT ? JSON.parse(env.AI_SCRIPT) : null;
  const format = env.AI_FORMAT || "native";
  if (format !== "native" && format !== "openai") throw new Error(`AI_FORMAT must be native or openai, got ${format}`);
  return {
    script,
    format,
    tokensPerSecond: Number(env.AI_TOKENS_PER_SECOND ?? "40"),
    replyTokens: Number(env.AI_REPLY_TOKENS ?? "0"),
    framesPerChunk: Math.max(1, Number(env.AI_FRAMES_PER_CHUNK ?? "3")),
    stampTokens: env.AI_STAMP_TOKENS === "1",
  };
}

export default class WorkersAIEmulator extends WorkerEntrypoint {
  async run(model, inputs, options) {
    const settings = readSettings(this.env);
    const context = { model, call: crypto.randomUUID() };
    // A script may give some models, or some prompts (the last user message), a script of
    // their own: fallbacks, and whole fault matrices served by one runtime.
    const prompt = lastUserContent(Array.isArray(inputs?.messages) ? inputs.messages : []);
    const script = settings.script?.models?.[model] ?? settings.script?.prompts?.[prompt] ?? settings.script;
    log({ event: "ai_run", ...context, stream: Boolean(inputs?.stream), format: settings.format, scripted: Boolean(script) });
    if (script?.start_delay_ms) await sleep(script.start_delay_ms);
    if (script?.fail_start) {
      log({ event: "ai_start_failed", ...context });
      throw new Error(script.fail_start);
    }
    const chunks = script ? scriptedChunks(inputs, script) : generatedChunks(inputs, model, settings);
    if (inputs?.stream) {
      const stream = streamFrom(chunks, context);
      return canError(script) ? nativeStream(stream, this.ctx) : stream;
    }
    const reply = replyFor(inputs, settings);
    let response = "";
    for (let i = 0; i < reply.count; i++) response += reply.nextToken();
    return { response, usage: reply.usage };
  }

  async fetch() {
    return new Response("Workers AI emulator: reach it through the AI service binding\n", { status: 404 });
  }
}
