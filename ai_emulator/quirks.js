// Upstream quirks (issue 27): the shapes real upstreams send, as script steps
// (QUIRK_STEPS) and as quirks that generated replies carry (REPLY_QUIRKS).

import { isString } from "./common.js";

// Shapes real upstreams send that the emulator's plain replies never do, each beside the field
// report or the source it comes from, so that tests and the runtime fuzzer feed the Worker
// the real ones. A script step {"quirk": NAME, ...fields} sends one as one network chunk
// (QUIRK_STEPS); AI_QUIRKS, or a script that generates, makes generated replies carry some
// (REPLY_QUIRKS). Numbers arrive as lexeme strings and are written into the JSON text as
// they are: a JS number would lose its lexeme (1.10 becomes 1.1, 1e400 Infinity), and the
// lexeme is what a reader must keep.

// A payload holds RAW where raw JSON text goes (only one place per payload).
export const RAW = "\u0000raw\u0000";
export const rawJson = (payload, raw) => JSON.stringify(payload).replace(JSON.stringify(RAW), () => raw);
// RFC 8259's number grammar.
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

// The chunk a quirk is framed in: Workers AI's OpenAI-style chunk for current models
// (compact; id, object, created, model; one choice with logprobs and finish_reason). The id
// and created are fixed, so that a script sends the same bytes on every run.
const QUIRK_CHUNK_ID = "chatcmpl-quirk";
const QUIRK_CHUNK_CREATED = 1764000000;
const quirkChunk = (model, choice, finishReason = null) => ({
  id: QUIRK_CHUNK_ID, object: "chat.completion.chunk", created: QUIRK_CHUNK_CREATED, model,
  choices: [{ index: 0, ...choice, logprobs: null, finish_reason: finishReason }],
});
const dataLine = (json) => `data: ${json}\n\n`;

// A field of a quirk step: its value (or `fallback` when it is left out) if `accepts` it.
function quirkField(step, name, wanted, accepts, fallback) {
  const value = Object.hasOwn(step, name) ? step[name] : fallback;
  if (value === undefined || !accepts(value)) {
    throw new Error(`script step ${JSON.stringify(step)}: ${name} must be ${wanted}`);
  }
  return value;
}

const lexemeOf = (step) => quirkField(step, "lexeme", "a JSON number as a string (\"1.10\", \"1e400\")",
  (value) => isString(value) && JSON_NUMBER.test(value));
const rawValueOf = (step) => quirkField(step, "json", "JSON text as a string", (value) => {
  try {
    JSON.parse(value);
    return isString(value);
  } catch {
    return false;
  }
});

// vLLM's error fields (ErrorInfo: message, type, param, code), in its order. `code` is
// written as JSON: vLLM's is the HTTP status, an integer.
const errorInfo = (step) => ({
  message: quirkField(step, "message", "a string", isString, "generation failed"),
  type: quirkField(step, "type", "a string", isString, "InternalServerError"),
  param: null,
  code: quirkField(step, "code", "a number or a string", (value) => typeof value === "number" || isString(value), 500),
});
// The payload vLLM ends a failed generation with (error_object below).
export const errorPayload = (step) => JSON.stringify({ error: errorInfo(step) });

const TEXT_FIELDS = {
  "delta.text": (text) => ({ delta: { text } }),
  text: (text) => ({ text }),
  "message.content": (text) => ({ message: { content: text } }),
};

// Each quirk step's wire text, from the step's fields and the model the call reached.
const QUIRK_STEPS = {
  // vLLM's OpenAI-compatible server ends a generation that fails part-way with an error
  // frame, then [DONE]: create_streaming_error_response (vllm-project/vllm,
  // vllm/entrypoints/openai/engine/serving.py, once serving_engine.py; the chat generator in
  // chat_completion/serving.py yields it from its except, then only [DONE]; read 2026-12-01.
  // A GenerationError is InternalServerError, 500).
  // Workers AI's OpenAI-style streams share vLLM's chunk shape (its chatcmpl-tool- ids, its
  // null entries). Compact here; vLLM's json.dumps puts a space after each , and :. Only the
  // error frame: a script sends [DONE] itself.
  error_object: (step) => dataLine(errorPayload(step)),
  // An ErrorResponse written into the stream whole: older vLLM's error body (object "error",
  // then the fields at the top level; newer versions nest them under "error"), which other
  // OpenAI-compatible servers put into a stream.
  error_body: (step) => dataLine(JSON.stringify({ object: "error", ...errorInfo(step) })),
  // A last chunk whose finish_reason is any string: vLLM's "error" (a generation that failed
  // inside the engine), aliases other servers send ("max_tokens", "eos", "end_turn"),
  // OpenAI's "content_filter" and "length" (issue 27, "Finish reasons").
  finish: (step, model) => dataLine(JSON.stringify(quirkChunk(model, { delta: {} },
    quirkField(step, "reason", "a string", isString)))),
  // delta.content as a JSON number: Workers AI's OpenAI-compatible endpoint streamed
  // {"delta":{"content":6}} from llama-3.3-70b-fp8-fast on 2026-09-02 (cloudflare/ai issue
  // 651); the same in mastra-ai/mastra issue 18289 and decolua/9router issue 1645.
  number_content: (step, model) => dataLine(rawJson(quirkChunk(model, { delta: { content: RAW } }), lexemeOf(step))),
  // The same reports' shape in the reasoning field ("reasoning_content", or Kimi's and newer
  // vLLM's "reasoning"): issue 27 saw reasoning_content: 5 dropped.
  number_reasoning: (step, model) => {
    const field = quirkField(step, "field", "\"reasoning_content\" or \"reasoning\"",
      (value) => value === "reasoning_content" || value === "reasoning", "reasoning_content");
    return dataLine(rawJson(quirkChunk(model, { delta: { [field]: RAW } }), lexemeOf(step)));
  },
  // A native frame whose response is a JSON number: the reports above in the native
  // framing, where a reader that goes through a float loses 1.10's lexeme and 1e400 whole.
  number_response: (step) => dataLine(rawJson({ response: RAW }, lexemeOf(step))),
  // delta.content as OpenAI's content-part array, the shape of a message's content
  // ([{"type": "text", "text": ...}]), which some OpenAI-compatible servers stream.
  content_parts: (step, model) => {
    const texts = quirkField(step, "texts", "a list of strings", (value) => Array.isArray(value) && value.every(isString));
    return dataLine(JSON.stringify(quirkChunk(model, { delta: { content: texts.map((text) => ({ type: "text", text })) } })));
  },
  // delta.content as any other JSON value (true, {"a":1}, [1,2]): shapes no text field
  // should carry, given raw so that nothing is lost on the way in (issue 27, rule 2).
  content_value: (step, model) => dataLine(rawJson(quirkChunk(model, { delta: { content: RAW } }), rawValueOf(step))),
  // The text in another field of choices[0] than delta.content: delta.text, text (the
  // Completions API's chunk) or message.content (a whole chat.completion's, sent as a
  // chunk): what OpenAI-compatible servers send in place of delta.content (issue 27).
  text_field: (step, model) => {
    const where = quirkField(step, "where", "\"delta.text\", \"text\" or \"message.content\"", (value) => Object.hasOwn(TEXT_FIELDS, value));
    return dataLine(JSON.stringify(quirkChunk(model, TEXT_FIELDS[where](quirkField(step, "text", "a string", isString)))));
  },
  // Both reasoning fields in one delta, one of them empty: vLLM renamed reasoning_content to
  // reasoning (vllm-project/vllm RFC 27755), and servers that keep both names send both
  // (Blaizzy/mlx-vlm pull request 1411; vllm-project/vllm pull request 34030 proposed it).
  reasoning_pair: (step, model) => dataLine(JSON.stringify(quirkChunk(model, { delta: {
    reasoning_content: quirkField(step, "reasoning_content", "a string", isString),
    reasoning: quirkField(step, "reasoning", "a string", isString),
  } }))),
  // A tool call whose arguments fragment is a JSON number, in the entry that starts the
  // call with its id and name: number_content's reports applied to the arguments, which
  // issue 27's rule 2 covers (no field report of this one yet).
  tool_arguments_number: (step, model) => {
    const call = {
      index: quirkField(step, "index", "an integer", Number.isInteger, 0),
      id: quirkField(step, "id", "a string", isString, "chatcmpl-tool-0123456789abcdef"),
      type: "function",
      function: { name: quirkField(step, "name", "a string", isString, "get_weather"), arguments: RAW },
    };
    return dataLine(rawJson(quirkChunk(model, { delta: { tool_calls: [call] } }), lexemeOf(step)));
  },
  // A byte-order mark (EF BB BF) before a data: line that is not the stream's first, as
  // concatenated bodies or a misbehaving proxy produce. The WHATWG rule strips only the
  // stream's first BOM ("One leading U+FEFF BYTE ORDER MARK character must be ignored if
  // any are present"), so this line's field name is "\uFEFFdata".
  bom_line: (step) => `\uFEFF${dataLine(JSON.stringify({ response: quirkField(step, "text", "a string", isString) }))}`,
};

export function quirkText(step, model) {
  if (!Object.hasOwn(QUIRK_STEPS, step.quirk)) throw new Error(`unknown script step quirk: ${JSON.stringify(step)}`);
  return QUIRK_STEPS[step.quirk](step, model);
}

// The quirks generated replies can carry (AI_QUIRKS; devtools/dev.py keeps the same list):
//   numbers       tokens that are numbers are sent as raw JSON numbers (response, or
//                 delta.content), and the reply opens with NUMBER_FRAGMENT (the reports of
//                 number_content above)
//   error_midway  after half the reply (its text, or its tool calls' argument fragments),
//                 error_object's frame, then [DONE] (vLLM's failed generation)
//   finish_alias  OpenAI framing: the last chunk's finish_reason "max_tokens" for "length"
//                 and "eos" for "stop" ("tool_calls" stays)
const REPLY_QUIRKS = ["numbers", "error_midway", "finish_alias"];
export const FINISH_ALIASES = { length: "max_tokens", stop: "eos" };
// A made-up fragment whose numbers are tokens of their own: a price, a lexeme a float
// would change, a citation.
const NUMBER_FRAGMENT = ["It costs ", "0.005", " dollars, about ", "1.10", " euros [", "1", "]. "];

export function replyQuirks(names, where) {
  const quirks = new Set();
  for (const name of names) {
    if (!REPLY_QUIRKS.includes(name)) throw new Error(`${where}: unknown quirk ${JSON.stringify(name)}; known: ${REPLY_QUIRKS.join(", ")}`);
    quirks.add(name);
  }
  return quirks;
}

// AI_QUIRKS "numbers": the reply opens with NUMBER_FRAGMENT, and a number after spaces
// (a prose table's " 2") becomes a token of its own, so the frames send it raw.
export function withNumberTokens(nextToken) {
  const queue = [...NUMBER_FRAGMENT];
  return () => {
    if (queue.length === 0) {
      const token = nextToken();
      const spaces = token.length - token.trimStart().length;
      if (spaces === 0 || spaces === token.length || !JSON_NUMBER.test(token.slice(spaces))) return token;
      queue.push(token.slice(0, spaces), token.slice(spaces));
    }
    return queue.shift();
  };
}

export const sentAsNumber = (reply, token) => reply.json === null && reply.quirks.has("numbers") && JSON_NUMBER.test(token);
