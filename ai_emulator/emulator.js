// Workers AI emulator: a Worker that the chat Worker reaches through a service binding
// named AI, so `env.AI.run(model, inputs, options)` crosses the same RPC boundary as the
// real binding. It answers with deterministic replies framed like Workers AI (readable
// markdown, or a test vocabulary: AI_STYLE), or replays a test script. It obeys the model
// catalog (src/chat/model/catalog.py, handed over as AI_CATALOG): an unknown or retired model
// fails to start with 5007 as the binding does, a paid-only one with 5035 on the Free plan,
// and each model streams in its own framing, thinking first where it thinks. Given
// `tools`, it validates them as the binding does (8001 for a model without tool calling, a
// malformed tool, `tool_choice` or `parallel_tool_calls`) and calls tools by a rule of its
// own (plannedToolCalls below: the tools whose name words the last user message mentions,
// or the one tool_choice names), streamed in the model's framing with the shapes of the
// 2026-02-17 Workers AI changelog and workers-ai-provider 4.0.0's fixtures; after a `tool`
// message the reply begins with "Tool result: " and that result's start. Given a
// `response_format`, it checks it against the model's json_mode as the binding does (8001,
// 5023 when streamed where JSON mode cannot stream, 5025 for a model without JSON mode:
// jsonMode below) and answers with JSON built from the schema (exampleValue), a native
// model's whole answer carrying it as an object. A script's `busy_ms` makes the model busy:
// `rejectIfBusy` (run()'s options) then fails the call at once with 3040, else it waits.
// Given image_url parts, a model with `vision` begins its reply by naming each image's
// format and pixel size, read from the image's header ("I see a 3×2 PNG."); one without
// fails with 5006 "Bad input", and an image it cannot read with 5004 (imagesSeen).
// Settings arrive as [vars] written by the dev launcher:
//   AI_CATALOG            the catalog as JSON (required)
//   AI_FORMAT             "native" or "openai": every model streams that way (default: its own)
//   AI_STYLE              "prose" (default): readable markdown answers; "words": the VOCABULARY
//                         below, for tests and benchmarks
//   AI_PLAN               "paid" (default) or "free": the account's Workers plan
//   AI_TOKENS_PER_SECOND  pacing; "0" sends as fast as the consumer pulls (default 40)
//   AI_REPLY_TOKENS       force the reply length (default: 60-300, derived from the messages)
//   AI_FRAMES_PER_CHUNK   frames per network chunk when unpaced (default 3)
//   AI_STAMP_TOKENS       "1": each token is "<t=ms>", its send time (latency benchmarks)
//   AI_SCRIPT             a JSON test script (docs/emulator.md, "Scripted upstreams")
//   AI_QUIRKS             comma-separated upstream quirks the generated replies carry (REPLY_QUIRKS)
import { WorkerEntrypoint } from "cloudflare:workers";

const encoder = new TextEncoder();

// AI_STYLE "words": words chosen so replies contain multi-byte UTF-8 (2, 3 and 4 bytes)
// that network chunking will split, plus punctuation and newlines that re-framing must keep
// intact.
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

// Thinking words: reasoning deltas come from their own vocabulary, so a test can tell
// reasoning counted as answer text.
const THOUGHTS = [" hmm", " let", " me", " think", " first", " consider", " maybe", " so", " ok", " 考虑", " 🤔"];
// Reasoning tokens by effort, spent from the same max_tokens budget as the answer (so a
// thinking model can spend the whole budget thinking, as real ones do).
const REASONING_TOKENS = { none: 0, low: 8, medium: 24, high: 48, max: 64 };
const log = (record) => console.log(JSON.stringify(record));

// The last user message's text (contentText): what `prompts` scripts are keyed by and
// `echo` sends, so an image turn's text parts script it.
function lastUserContent(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i] && messages[i].role === "user") return contentText(messages[i].content);
  }
  return "";
}

// The conversation the model was sent, one `role: text` line a message (a call's name for
// its text, when it has none): a `transcript` step sends it, so a test can see the history
// the Worker rebuilt (a stored response's, continued by previous_response_id).
function transcript(messages) {
  return messages.map((message) => {
    const calls = (message?.tool_calls ?? []).map((call) => `call ${call?.function?.name}`).join(", ");
    return `${message?.role}: ${contentText(message?.content) || calls}`;
  }).join("\n");
}

// A message's text: a string, or the text parts of a content array joined by newlines (as
// the Worker joins a list of text parts it sends as a string, chat/api/validation.py), so a
// text reads the same whichever way it came; image parts carry none.
function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.filter((part) => typeof part?.text === "string").map((part) => part.text).join("\n");
  return content === undefined || content === null ? "" : String(content);
}

const isPlainObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

// --- Tool calling -------------------------------------------------------------------------
// The binding's checks of the tool inputs, as far as they are known: a model without tool
// calling refuses `tools`; vLLM-served models refuse a `tool_choice` other than OpenAI's
// (workers-ai-provider 3.1.6's notes: "8001: Invalid input for tool_choice: \"any\""), and a
// description that is not a string ("description: false ... causes 8001"). Tools come in
// OpenAI's shape {type: "function", function: {name, description?, parameters?}} or the
// native models' flat {name, description?, parameters?}.
const TOOL_CHOICES = ["auto", "none", "required"];

function normalizeTool(tool) {
  if (!isPlainObject(tool)) return null;
  let definition = tool;
  if (tool.function !== undefined || tool.type !== undefined) {
    if (tool.type !== "function" || !isPlainObject(tool.function)) return null;
    definition = tool.function;
  }
  const { name, description, parameters } = definition;
  if (typeof name !== "string" || name === "") return null;
  if (description !== undefined && typeof description !== "string") return null;
  if (parameters !== undefined && !isPlainObject(parameters)) return null;
  return { name, parameters: parameters ?? {} };
}

// The tool settings of a call, or InferenceUpstreamError 8001 for what the binding refuses.
function toolSettings(entry, inputs) {
  const { tools, tool_choice: choice, parallel_tool_calls: parallel } = inputs;
  const invalid = () => new InferenceUpstreamError(8001, "Invalid input");
  if (tools !== undefined && !entry.tools) throw invalid();
  const normalized = tools === undefined ? [] : Array.isArray(tools) ? tools.map(normalizeTool) : [null];
  if (normalized.includes(null)) throw invalid();
  if (choice !== undefined) {
    if (tools === undefined) throw invalid(); // vLLM: "When using `tool_choice`, `tools` must be set."
    const named = isPlainObject(choice) && choice.type === "function" && isPlainObject(choice.function)
      && normalized.some((tool) => tool.name === choice.function.name);
    if (!TOOL_CHOICES.includes(choice) && !named) throw invalid();
  }
  if (parallel !== undefined && typeof parallel !== "boolean") throw invalid();
  return { tools: normalized, choice: choice ?? "auto", parallel: parallel ?? true };
}

// The emulator's own rule for when the fake model calls tools (the contract other parts
// test against): only when the last message is the user's and tool_choice is not "none";
// the tool tool_choice names, else every tool one of whose name words (split on "_" and
// "-", 4+ characters, any case) the last user message contains, else with "required" the
// first tool; with parallel_tool_calls false only the first of them.
function plannedToolCalls(tooling, messages) {
  const { tools, choice, parallel } = tooling;
  const last = messages[messages.length - 1];
  if (tools.length === 0 || choice === "none" || last?.role !== "user") return [];
  let wanted;
  if (isPlainObject(choice)) {
    wanted = [tools.find((tool) => tool.name === choice.function.name)];
  } else {
    const text = contentText(last.content).toLowerCase();
    const words = (name) => name.toLowerCase().split(/[_-]/).filter((word) => word.length >= 4);
    wanted = tools.filter((tool) => words(tool.name).some((word) => text.includes(word)));
    if (wanted.length === 0 && choice === "required") wanted = [tools[0]];
  }
  return parallel ? wanted : wanted.slice(0, 1);
}

// A value a schema accepts. For tool arguments (`deep` false) the plainest one: its const,
// default, first example or first enum value, else one of the type's ({} and [] stay empty).
// For JSON mode (`deep`) one built to satisfy the schema: const, first enum value, first
// anyOf/oneOf/allOf branch, every property of an object, minItems items (one when none is
// asked for), numbers in range and on multipleOf, strings of the length and format asked
// for; `$ref` to any local JSON pointer ("#", "#/$defs/x", "#/definitions/x"). default and
// examples are annotations that nothing checks, so JSON mode does not trust them; pattern
// is not followed. The schema is the client's: past SCHEMA_SOFT_REFS `$ref`s on the way
// down (recursion), SCHEMA_SOFT_DEPTH nested steps or SCHEMA_SOFT_NODES values it takes the
// shortest way out (only required properties, minItems items, null or a null branch where
// allowed), and past the hard bounds null, so a recursive schema terminates, the answer
// stays small and the JS stack shallow.
const SCHEMA_SOFT_REFS = 2;
const SCHEMA_SOFT_DEPTH = 16;
const SCHEMA_HARD_DEPTH = 48;
const SCHEMA_SOFT_NODES = 1_000;
const SCHEMA_HARD_NODES = 5_000;
const SCHEMA_MAX_ITEMS = 256; // a minItems above it is not met (the answer would be huge)
const SCHEMA_REF_HOPS = 32;
// Values for string formats (JSON Schema 2020-12's format vocabulary: the ones OpenAI's
// Structured Outputs take, plus uri); the dates are the day this was written, 2026-12-02.
const FORMAT_EXAMPLES = {
  "date-time": "2026-12-02T12:00:00Z", date: "2026-12-02", time: "12:00:00Z", duration: "PT1M",
  email: "user@example.com", hostname: "example.com", ipv4: "192.0.2.1", ipv6: "2001:db8::1",
  uuid: "00000000-0000-4000-8000-000000000000", uri: "https://example.com/",
};
const PLAIN_VALUES = { string: "example", number: 1, integer: 1, boolean: true, object: {}, array: [], null: null };

// The target of a local `$ref` (a JSON pointer into the root schema), or undefined.
function schemaAt(root, ref) {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node = root;
  for (const raw of ref.slice(2).split("/")) {
    let key;
    try {
      key = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
    } catch {
      return undefined;
    }
    if (!(isPlainObject(node) || Array.isArray(node)) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

// A number the schema's bounds and multipleOf allow: the smallest positive multiple (1
// without multipleOf), moved into the range when it falls outside. exclusiveMinimum and
// exclusiveMaximum are numbers (draft 6 on) or booleans beside minimum/maximum (draft 4).
function numberValue(node, integer) {
  const finite = (value) => (typeof value === "number" && Number.isFinite(value) ? value : undefined);
  let low = finite(node.minimum), high = finite(node.maximum), lowOpen = false, highOpen = false;
  const exclusiveLow = finite(node.exclusiveMinimum), exclusiveHigh = finite(node.exclusiveMaximum);
  if (exclusiveLow !== undefined && (low === undefined || exclusiveLow >= low)) [low, lowOpen] = [exclusiveLow, true];
  else if (node.exclusiveMinimum === true && low !== undefined) lowOpen = true;
  if (exclusiveHigh !== undefined && (high === undefined || exclusiveHigh <= high)) [high, highOpen] = [exclusiveHigh, true];
  else if (node.exclusiveMaximum === true && high !== undefined) highOpen = true;
  const multiple = finite(node.multipleOf) > 0 ? node.multipleOf : undefined;
  const step = integer ? (multiple !== undefined && Number.isInteger(multiple) ? multiple : 1) : multiple;
  if (step !== undefined) {
    let k = 1;
    if (low !== undefined) k = Math.max(k, lowOpen ? Math.floor(low / step) + 1 : Math.ceil(low / step));
    if (high !== undefined) k = Math.min(k, highOpen ? Math.ceil(high / step) - 1 : Math.floor(high / step));
    return k * step;
  }
  if (low !== undefined && high !== undefined && (1 < low || (1 === low && lowOpen) || 1 > high || (1 === high && highOpen))) {
    return lowOpen || highOpen ? (low + high) / 2 : low;
  }
  if (low !== undefined && (1 < low || (1 === low && lowOpen))) return lowOpen ? low + 1 : low;
  if (high !== undefined && (1 > high || (1 === high && highOpen))) return highOpen ? high - 1 : high;
  return 1;
}

function stringValue(node) {
  const format = typeof node.format === "string" && Object.hasOwn(FORMAT_EXAMPLES, node.format) ? FORMAT_EXAMPLES[node.format] : null;
  if (format !== null) return format;
  const min = Number.isInteger(node.minLength) ? Math.min(node.minLength, 4096) : 0;
  const max = Number.isInteger(node.maxLength) && node.maxLength >= 0 ? node.maxLength : Infinity;
  const text = "example".padEnd(min, "s"); // lengths in code points: ASCII, so one a unit
  return text.slice(0, Math.max(min, Math.min(text.length, max)));
}

// The type a schema without "type" has, from its keywords.
function impliedType(node) {
  if (isPlainObject(node.properties) || Array.isArray(node.required)) return "object";
  if (node.items !== undefined || node.prefixItems !== undefined || node.minItems !== undefined) return "array";
  if (["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"].some((key) => node[key] !== undefined)) return "number";
  if (["minLength", "maxLength", "format", "pattern"].some((key) => node[key] !== undefined)) return "string";
  return undefined;
}

// An own property, even one named "__proto__" (an assignment would set the prototype).
const defineMember = (object, name, value) => Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });

function exampleValue(schema, { deep = false, root = schema } = {}) {
  let nodes = 0;
  const build = (start, depth, refs) => {
    nodes += 1;
    if (depth > SCHEMA_HARD_DEPTH || nodes > SCHEMA_HARD_NODES) return null;
    let node = start;
    for (let hops = 0; deep && isPlainObject(node) && typeof node.$ref === "string" && hops < SCHEMA_REF_HOPS; hops++) {
      node = schemaAt(root, node.$ref) ?? {};
      refs += 1;
    }
    const short = refs > SCHEMA_SOFT_REFS || depth > SCHEMA_SOFT_DEPTH || nodes > SCHEMA_SOFT_NODES; // the shortest way out
    if (!isPlainObject(node)) return "example"; // true, or anything else: it accepts anything
    if (Object.hasOwn(node, "const")) return node.const;
    if (!deep && Object.hasOwn(node, "default")) return node.default;
    if (!deep && Array.isArray(node.examples) && node.examples.length > 0) return node.examples[0];
    if (Array.isArray(node.enum) && node.enum.length > 0) return node.enum[0];
    const types = Array.isArray(node.type) ? node.type : [node.type ?? (deep ? impliedType(node) : undefined)];
    const type = types.find((name) => name !== "null") ?? types[0];
    if (!deep) return Object.hasOwn(PLAIN_VALUES, type) ? PLAIN_VALUES[type] : "example";
    if (short && types.includes("null")) return null;
    const branches = [node.anyOf, node.oneOf, node.allOf].find((list) => Array.isArray(list) && list.length > 0);
    if (branches && node.type === undefined) {
      const nullable = short ? branches.find((branch) => isPlainObject(branch) && branch.type === "null") : undefined;
      return build(nullable ?? branches[0], depth + 1, refs);
    }
    switch (type) {
      case "object": {
        const properties = isPlainObject(node.properties) ? node.properties : {};
        const required = Array.isArray(node.required) ? node.required.filter((name) => typeof name === "string") : [];
        const names = new Set(short ? required : [...Object.keys(properties), ...required]);
        const object = {};
        for (const name of names) defineMember(object, name, build(Object.hasOwn(properties, name) ? properties[name] : {}, depth + 1, refs));
        return object;
      }
      case "array": {
        const least = Number.isInteger(node.minItems) && node.minItems > 0 ? Math.min(node.minItems, SCHEMA_MAX_ITEMS) : short ? 0 : 1;
        const count = Number.isInteger(node.maxItems) && node.maxItems >= 0 ? Math.min(least, node.maxItems) : least;
        const tuple = Array.isArray(node.prefixItems) ? node.prefixItems : Array.isArray(node.items) ? node.items : [];
        const rest = isPlainObject(node.items) ? node.items : isPlainObject(node.additionalItems) ? node.additionalItems : {};
        return Array.from({ length: count }, (_, i) => build(i < tuple.length ? tuple[i] : rest, depth + 1, refs));
      }
      case "string": return stringValue(node);
      case "number": return numberValue(node, false);
      case "integer": return numberValue(node, true);
      case "boolean": return true;
      case "null": return null;
      default: return "example";
    }
  };
  return build(schema, 0, 0);
}

// The arguments of a call as JSON text: each required property (every property when none
// is required) with an example value.
function exampleArguments(parameters) {
  const properties = isPlainObject(parameters.properties) ? parameters.properties : {};
  const required = Array.isArray(parameters.required) ? parameters.required.filter((name) => typeof name === "string") : [];
  const names = [...new Set(required.length > 0 ? required : Object.keys(properties))];
  // Built as text, not as an object, so that a property named "__proto__" stays a property.
  const members = names.map((name) => `${JSON.stringify(name)}:${JSON.stringify(exampleValue(Object.hasOwn(properties, name) ? properties[name] : {}) ?? null)}`);
  return `{${members.join(",")}}`;
}

const hex32 = (random) => Math.floor(random() * 4294967296).toString(16).padStart(8, "0");

// Text cut into pieces of 1 to `longest` characters (whole code points: never half of a
// surrogate pair), at seeded random lengths.
function pieces(text, random, longest) {
  const points = Array.from(text);
  const result = [];
  for (let i = 0; i < points.length;) {
    const length = 1 + Math.floor(random() * longest);
    result.push(points.slice(i, i + length).join(""));
    i += length;
  }
  return result;
}

// The calls the reply makes, each with its id and its arguments as streamed fragments (one
// completion token each), within what the token budget leaves after thinking: a call the
// budget cuts short keeps the fragments that fit and the answer ends with "length".
function toolCallsFor(wanted, random, allowance) {
  const calls = [];
  let spent = 0;
  let cut = false;
  for (const tool of wanted) {
    const id = `chatcmpl-tool-${hex32(random)}${hex32(random)}`;
    const json = exampleArguments(tool.parameters);
    const fragments = pieces(json, random, 8);
    const kept = fragments.slice(0, Math.max(0, allowance - spent));
    if (kept.length === 0) {
      cut = true;
      break;
    }
    spent += kept.length;
    calls.push({ id, name: tool.name, json, fragments: kept, complete: kept.length === fragments.length });
    if (kept.length < fragments.length) {
      cut = true;
      break;
    }
  }
  return { calls, spent, cut };
}

// --- Images (issue 30) --------------------------------------------------------------------
// A user message's content may be a list of parts, {"type": "text", "text"} and
// {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}} (the chat-
// completions schemas of the model pages, cloudflare-docs src/content/workers-ai-models/
// <model>.json; the older Llama 4 / Mistral 3.1 schemas: "image uri with data ... HTTP URL
// will not be accepted"). The catalog's `vision` says which models see them. A vision
// model's reply begins by naming each image of the conversation, in order, with its format
// and pixel size read from its bytes (never from the data URL's media type), "I see a 3×2
// PNG and a 1×1 GIF.", so a test sees what reached the model. Only the header bytes are
// decoded. Facts checked 2026-12-02 (docs/emulator.md, "Images"):
// - a model whose schema takes text only fails an array content with 5006 (HTTP 400), not
//   in Cloudflare's errors table: "AiError: Bad input: Error: oneOf at '/' not met, 0
//   matches: required properties at '/' are 'prompt', Type mismatch of
//   '/messages/0/content', 'array' not in 'string'" (anomalyco/opencode issue #30381,
//   Stackbilt-dev/llm-providers issue #91, a Cloudflare Discord thread on
//   qwen3-30b-a3b-fp8). The emulator refuses every model without `vision` so: for a model
//   whose schema is OpenAI's (which lists image_url parts for every model, vision or not)
//   no source says what the binding does with an image (fails, drops it, or answers as if
//   there were none); refusing is the emulator's assumption, because a silently dropped
//   image is the failure a test must not mistake for success, and the Worker never sends
//   one there (it refuses a named model without vision with a 400).
// - an image the binding cannot read: the errors table's "Invalid data | 5004 | 400 |
//   Invalid data type for base64 input: ${type}" (workers-ai/platform/errors, last updated
//   2026-07-29). What the binding puts in ${type} is not documented: the emulator names the
//   problem there ("not base64", "not a PNG, JPEG, WebP or GIF image", or the JS type of a
//   url that is no string), never the bytes. It fetches no URL: an https URL is "not a
//   base64 data URL" (the older schemas refuse one; the newer say nothing).
const IMAGE_UNREADABLE = "Invalid data type for base64 input";
const BASE64_TEXT = /^[A-Za-z0-9+/]*={0,2}$/;
// The most JPEG segments read before its frame header: real files have a few dozen (EXIF,
// ICC, thumbnails); a hostile one costs no loop over megabytes.
const JPEG_MAX_SEGMENTS = 1000;
// Start-of-frame markers (ITU T.81, table B.1): SOF0-SOF15 but DHT (C4), JPG (C8) and DAC
// (CC); TEM (01) and RST0-7 (D0-D7) stand alone, without a length.
const isJpegFrame = (marker) => marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
const standsAlone = (marker) => marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7);

// The image parts of a call's messages, in order: the message's index, the part's url
// and its payload (dataUrlPayload: null for a url that is no base64 data URL).
function imageParts(messages) {
  const parts = [];
  messages.forEach((message, index) => {
    if (!Array.isArray(message?.content)) return;
    for (const part of message.content) {
      if (part?.type !== "image_url") continue;
      const url = part.image_url?.url;
      parts.push({ index, url, payload: dataUrlPayload(url) });
    }
  });
  return parts;
}

// A base64 data URL's payload, {text, size} (size: its decoded bytes, from its length), or
// null for a url that is none. RFC 2397: data:[<media type>][;base64],<data>; the padding
// may be left out, as atob allows.
function dataUrlPayload(url) {
  if (typeof url !== "string" || url.slice(0, 5).toLowerCase() !== "data:") return null;
  const comma = url.indexOf(",");
  if (comma < 0 || !url.slice(0, comma).toLowerCase().endsWith(";base64")) return null;
  const text = url.slice(comma + 1);
  if (!BASE64_TEXT.test(text)) return null;
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const rest = text.length % 4;
  if ((padding > 0 && rest !== 0) || rest === 1) return null;
  return { text, size: Math.floor(text.length / 4) * 3 - padding + (rest > 0 ? rest - 1 : 0) };
}

// Bytes [offset, offset + count) of a payload, decoding only the base64 quartets that hold
// them; null past its end.
function payloadBytes(payload, offset, count) {
  if (offset + count > payload.size) return null;
  const first = Math.floor(offset / 3) * 4;
  const last = Math.min(payload.text.length, Math.ceil((offset + count) / 3) * 4);
  const skip = offset - (first / 4) * 3;
  return base64Bytes(payload.text.slice(first, last)).subarray(skip, skip + count);
}

const uint = (bytes, at, size, littleEndian) => {
  let value = 0;
  for (let i = 0; i < size; i++) value = value * 256 + bytes[littleEndian ? at + size - 1 - i : at + i];
  return value;
};
const hasAscii = (bytes, at, text) => bytes.length >= at + text.length
  && Array.from(text).every((character, i) => bytes[at + i] === character.charCodeAt(0));

// The format and pixel size in an image's header, {format, width, height}, or null for
// bytes that are no PNG, JPEG, WebP or GIF, or whose header is cut short or declares no
// pixels (the same reading as the Worker's chat/api/images.py, written for the emulator).
function imageHeader(payload) {
  const head = payloadBytes(payload, 0, Math.min(payload.size, 30));
  let found = null;
  if (hasAscii(head, 0, "\x89PNG\r\n\x1a\n")) {
    // PNG (3rd edition, 5.6): the first chunk is IHDR, width and height 4 bytes each, big-endian.
    if (hasAscii(head, 12, "IHDR") && head.length >= 24) found = { format: "PNG", width: uint(head, 16, 4), height: uint(head, 20, 4) };
  } else if (hasAscii(head, 0, "GIF87a") || hasAscii(head, 0, "GIF89a")) {
    // GIF89a, 18: the logical screen's width and height, 2 bytes each, little-endian.
    if (head.length >= 10) found = { format: "GIF", width: uint(head, 6, 2, true), height: uint(head, 8, 2, true) };
  } else if (hasAscii(head, 0, "RIFF") && hasAscii(head, 8, "WEBP")) {
    found = webpSize(head);
  } else if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) {
    found = jpegSize(payload);
  }
  return found !== null && found.width > 0 && found.height > 0 ? found : null;
}

// RFC 9649: the first chunk after "WEBP" is VP8 (lossy: a key frame's start code 9D 01 2A,
// then 14-bit width and height), VP8L (lossless: signature 2F, then 14 bits each of width
// and height less one) or VP8X (extended: 24 bits each of the canvas' width and height less one).
function webpSize(head) {
  if (hasAscii(head, 12, "VP8 ")) {
    if (head.length < 30 || head[23] !== 0x9d || head[24] !== 0x01 || head[25] !== 0x2a) return null;
    return { format: "WebP", width: uint(head, 26, 2, true) & 0x3fff, height: uint(head, 28, 2, true) & 0x3fff };
  }
  if (hasAscii(head, 12, "VP8L")) {
    if (head.length < 25 || head[20] !== 0x2f) return null;
    const bits = uint(head, 21, 4, true);
    return { format: "WebP", width: (bits % 0x4000) + 1, height: (Math.floor(bits / 0x4000) % 0x4000) + 1 };
  }
  if (hasAscii(head, 12, "VP8X") && head.length >= 30) {
    return { format: "WebP", width: uint(head, 24, 3, true) + 1, height: uint(head, 27, 3, true) + 1 };
  }
  return null;
}

// JPEG: the segments after SOI, each a marker and a length, until a start-of-frame
// (P, then Y lines and X samples per line, 2 bytes each, big-endian); at most
// JPEG_MAX_SEGMENTS steps, each decoding a few bytes.
function jpegSize(payload) {
  let at = 2;
  for (let step = 0; step < JPEG_MAX_SEGMENTS; step++) {
    const marker = payloadBytes(payload, at, 2);
    if (marker === null || marker[0] !== 0xff) return null;
    if (marker[1] === 0xff) { // a fill byte before a marker
      at += 1;
      continue;
    }
    if (standsAlone(marker[1])) {
      at += 2;
      continue;
    }
    if (marker[1] === 0xd9 || marker[1] === 0xda) return null; // the end, or the scan, before a frame header
    const length = payloadBytes(payload, at + 2, 2);
    if (length === null || uint(length, 0, 2) < 2) return null;
    if (isJpegFrame(marker[1])) {
      const frame = payloadBytes(payload, at + 5, 4);
      return frame === null ? null : { format: "JPEG", width: uint(frame, 2, 2), height: uint(frame, 0, 2) };
    }
    at += 2 + uint(length, 0, 2);
  }
  return null;
}

// What a call's images are, for the reply ("a 3×2 PNG"), in order. Throws what the binding
// throws: 5006 for a model without vision, 5004 for an image it cannot read.
function imagesSeen(entry, parts) {
  if (parts.length === 0) return [];
  if (!entry.vision) {
    throw new InferenceUpstreamError(5006, `Bad input: Type mismatch of '/messages/${parts[0].index}/content', 'array' not in 'string'`);
  }
  return parts.map(({ url, payload }) => {
    if (typeof url !== "string") throw new InferenceUpstreamError(5004, `${IMAGE_UNREADABLE}: ${url === null ? "null" : typeof url}`);
    if (payload === null) throw new InferenceUpstreamError(5004, `${IMAGE_UNREADABLE}: not a base64 data URL`);
    const image = imageHeader(payload);
    if (image === null) throw new InferenceUpstreamError(5004, `${IMAGE_UNREADABLE}: not a PNG, JPEG, WebP or GIF image`);
    return `a ${image.width}\u00d7${image.height} ${image.format}`;
  });
}

// "I see a 3×2 PNG." / "I see a 3×2 PNG and a 1×1 GIF." / "I see a, b and c."
function imageSentence(seen) {
  const named = seen.length === 1 ? seen[0] : `${seen.slice(0, -1).join(", ")} and ${seen[seen.length - 1]}`;
  return `I see ${named}.`;
}

// What the ai_run record says of the images: how many, and their decoded bytes in all
// (of those that are base64 data URLs); never a byte of them.
function describeImages(parts) {
  return { images: parts.length, image_bytes: parts.reduce((total, part) => total + (part.payload?.size ?? 0), 0) };
}

// --- Prose replies ------------------------------------------------------------------------
// AI_STYLE "prose": a newcomer at the chat page reads a plausible markdown answer, not word
// salad. Each reply is one document (an opening that quotes the question, a heading, a
// list, a fenced code block, a table, a closing line and a note saying where it came from)
// assembled from small phrase banks by the conversation's seed. It keeps some multi-byte
// UTF-8 (é, ï, 東京, 🚀, —, “”), so chunk boundaries still fall inside characters, and
// never a "<": the question's own are replaced, so no reply carries HTML.
const PROSE = {
  openings: [
    (question) => `You asked “${question}”. Here is a short answer, with an example and a quick reference.`,
    (question) => `“${question}” is a good question; let me walk through it step by step.`,
    (question) => `About “${question}”: the short version first, then the details.`,
    (question) => `Thanks for asking “${question}”. Below is an overview — a list, some code and a table.`,
    (question) => `Let's look at “${question}” together, starting with the main ideas.`,
  ],
  headings: ["## The short answer", "## How it works", "### Step by step", "## The main ideas", "### What to keep in mind"],
  listIntros: ["The essentials:", "In practice:", "A few things matter most:", "Here is the plan:"],
  items: [
    "Start with the smallest version that works, then grow it.",
    "Stream the answer: show the first words as soon as they arrive.",
    "Treat text as Unicode — café, naïve and Tokyo (東京) must survive any chunk boundary.",
    "Measure before optimising; the slow part is rarely where you expect.",
    "Handle errors explicitly, and keep the partial result when a stream fails.",
    "Write a test for each behaviour you rely on.",
    "Keep secrets out of logs: log ids and counts, never content.",
  ],
  codeIntros: [(language) => `A small example in ${language}:`, () => "Here is a sketch to start from:", () => "For instance:"],
  code: [
    ["Python", "python", [
      "import httpx",
      "",
      "with httpx.stream(\"POST\", \"http://localhost:8787/api/chat\", json={\"messages\": messages}) as response:",
      "    for line in response.iter_lines():",
      "        print(line)",
    ]],
    ["Python", "python", [
      "def pieces(text: str, size: int = 4):",
      "    \"\"\"Cut text the way a stream might: café → ca, fé.\"\"\"",
      "    for start in range(0, len(text), size):",
      "        yield text[start:start + size]",
    ]],
    ["JavaScript", "js", [
      "const response = await fetch(\"/api/chat\", { method: \"POST\", body: JSON.stringify({ messages }) });",
      "const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();",
      "for (let part = await reader.read(); !part.done; part = await reader.read()) {",
      "  console.log(part.value);",
      "}",
    ]],
    ["JavaScript", "js", [
      "const words = [\"café\", \"naïve\", \"東京\", \"🚀\"];",
      "for (const word of words) {",
      "  console.log(word, new TextEncoder().encode(word).length, \"bytes\");",
      "}",
    ]],
  ],
  tableIntros: ["At a glance:", "A quick reference:", "For comparison:", "In a table:"],
  tables: [
    [["Character", "Example", "UTF-8 bytes"],
      [["ASCII letter", "a", "1"], ["Accented letter", "é", "2"], ["Kanji", "東", "3"], ["Emoji", "🚀", "4"]]],
    [["Step", "Where", "Typical time"],
      [["Request", "browser → Worker", "a few ms"], ["First token", "the model", "under a second"],
        ["Each next token", "model → page", "20–50 ms"], ["Last event", "Worker → browser", "at once"]]],
    [["Approach", "Good for", "Trade-off"],
      [["Streaming", "long answers", "more events"], ["Whole answer", "short replies", "a longer wait"],
        ["Cache", "repeated questions", "stale results"], ["Retry", "flaky networks", "duplicate work"]]],
  ],
  closings: [
    "That is the gist — ask a follow-up if anything is unclear 🙂",
    "Hope this helps; happy building 🚀",
    "In short: start small, measure, then improve. Bonne chance!",
    "If you share more details, I can make the example more specific.",
    "Voilà — that should be enough to get started.",
  ],
  note: "_This answer comes from the local Workers AI emulator, not from a model._",
  // Past the document (AI_REPLY_TOKENS longer than it): more sections of the same kinds.
  sections: ["More detail", "A closer look", "Edge cases", "Going further", "Common pitfalls"],
  sentences: [
    "The same idea applies at every scale.",
    "Small, well-named steps are easier to review — and to undo.",
    "Each part can be tested on its own before they are put together.",
    "A déjà-vu moment is a hint that a helper function is missing.",
    "Most surprises come from the boundaries: empty input, huge input, odd characters like 東京.",
    "When in doubt, write down what you expect before you run it.",
  ],
  // Reasoning deltas, for thinking models: short thoughts in the same voice.
  thoughts: [
    "Let me think about what is being asked.",
    "The question seems to want a practical answer.",
    "A short list, an example and a table should cover it.",
    "I should keep it concise — and check the details.",
    "Maybe start with an overview, then the code.",
    "Okay, that looks like a plan.",
  ],
};

const QUOTED_WORDS = 8;
const QUOTED_LENGTH = 80; // code points: a question of one long word stays a short quote

// The last user question's first words, as inline text: no "<" or ">" (no HTML), no
// character that opens a markdown span (`, *, [, ], \), whitespace (newlines) as single spaces.
function questionQuote(messages) {
  const last = [...messages].reverse().find((message) => message?.role === "user");
  const words = contentText(last?.content).replace(/[<>`*[\]\\]/g, " ").split(/\s+/).filter(Boolean);
  let quote = Array.from(words.slice(0, QUOTED_WORDS).join(" "));
  const cut = words.length > QUOTED_WORDS || quote.length > QUOTED_LENGTH;
  quote = quote.slice(0, QUOTED_LENGTH).join("").trimEnd();
  return quote === "" ? "your question" : cut ? `${quote}…` : quote;
}

// Prose cut into tokens the size real ones have: a word with its leading space, a run of
// spaces or a newline; longer words in pieces of at most 6 code points. Joined, the
// tokens are the text.
function textTokens(text) {
  const tokens = [];
  for (const [word] of text.matchAll(/\n| ?[^ \n]+| +/gu)) {
    const points = Array.from(word);
    for (let i = 0; i < points.length; i += 6) tokens.push(points.slice(i, i + 6).join(""));
  }
  return tokens;
}

const choose = (random, bank) => bank[Math.floor(random() * bank.length)];

// `count` distinct entries of `bank` in seeded order.
function chooseSome(random, bank, count) {
  const left = [...bank];
  return Array.from({ length: Math.min(count, left.length) }, () => left.splice(Math.floor(random() * left.length), 1)[0]);
}

function proseList(random) {
  const numbered = random() < 0.5;
  return chooseSome(random, PROSE.items, 3 + Math.floor(random() * 2))
    .map((item, i) => `${numbered ? `${i + 1}.` : "-"} ${item}`).join("\n");
}

function proseCode(random) {
  const [language, label, lines] = choose(random, PROSE.code);
  return `${choose(random, PROSE.codeIntros)(language)}\n\n\`\`\`${label}\n${lines.join("\n")}\n\`\`\``;
}

function proseTable(random) {
  const [header, rows] = choose(random, PROSE.tables);
  // Rows keep their order (the tables read top to bottom).
  const kept = chooseSome(random, rows.map((_, i) => i), 2 + Math.floor(random() * 3)).sort((a, b) => a - b);
  const line = (cells) => `| ${cells.join(" | ")} |`;
  const intro = choose(random, PROSE.tableIntros);
  return [`${intro}\n`, line(header), line(header.map(() => "---")), ...kept.map((i) => line(rows[i]))].join("\n");
}

function proseDocument(random, quote) {
  return [
    choose(random, PROSE.openings)(quote),
    choose(random, PROSE.headings),
    `${choose(random, PROSE.listIntros)}\n\n${proseList(random)}`,
    proseCode(random),
    proseTable(random),
    choose(random, PROSE.closings),
    PROSE.note,
  ].join("\n\n");
}

function proseSection(random, part) {
  const heading = `### ${choose(random, PROSE.sections)} (part ${part})`;
  const body = choose(random, [proseList, proseCode, proseTable])(random);
  return `\n\n${heading}\n\n${chooseSome(random, PROSE.sentences, 2).join(" ")}\n\n${body}`;
}

// The prose reply's tokens: the tool result's prefix, the document, then, for as long as
// AI_REPLY_TOKENS asks, one more section at a time, so a long reply is never held whole.
function* proseTokens(prefix, document, random) {
  yield* prefix;
  yield* document;
  for (let part = 2; ; part++) yield* textTokens(proseSection(random, part));
}

function* proseThoughts(random) {
  for (let first = true; ; first = false) yield* textTokens(`${first ? "" : " "}${choose(random, PROSE.thoughts)}`);
}

// The prose style of a reply: its document's length in tokens (the reply's own when
// AI_REPLY_TOKENS does not force one), its answer tokens and its thoughts. Answer and
// thoughts draw from generators of their own: a streamed reply thinks first and a collected
// one last, and both read the same.
function proseReply(messages, seed, prefix) {
  const random = seededRandom(seed ^ 0x2545f491);
  const document = textTokens(`${prefix.length > 0 ? "\n\n" : ""}${proseDocument(random, questionQuote(messages))}`);
  const tokens = proseTokens(prefix, document, random);
  const thoughts = proseThoughts(seededRandom(seed ^ 0x68e31da4));
  return { length: document.length, nextToken: () => tokens.next().value, nextThought: () => thoughts.next().value };
}

// After a tool's result the reply starts by quoting it, so tests can see that it reached
// the model: "Tool result: " and the result's first 60 characters, in a few tokens.
function toolResultTokens(messages, random) {
  const last = messages[messages.length - 1];
  if (last?.role !== "tool") return [];
  const excerpt = Array.from(contentText(last.content)).slice(0, 60).join("");
  return ["Tool result: ", ...pieces(excerpt, random, 16)];
}

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

function replyFor(inputs, settings, thinking = 0, cachedTokens = null, tooling = NO_TOOLS, quirks = NO_QUIRKS, output = null,
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

function padding(random) {
  const length = Math.floor(random() * 24);
  let text = "";
  for (let i = 0; i < length; i++) text += String.fromCharCode(97 + Math.floor(random() * 26));
  return text;
}

// Native tool calls come whole, in one frame, with their arguments as an object (the
// models' output schema: tool_calls [{name, arguments}]); native streams carry no
// finish_reason. A call the budget cut short is left out.
const nativeToolCalls = (reply) => reply.toolCalls.filter((call) => call.complete)
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

const sseFrame = (payload) => encoder.encode(`data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`);

// The generated reply as network chunks. Paced: one tick per token, each sending a random
// share of what is pending, so boundaries fall inside frames and inside characters.
// Unpaced (benchmarks): about AI_FRAMES_PER_CHUNK frames a chunk, cut at random points.
async function* generatedChunks(reply, model, framing, reasoningField) {
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

// --- Upstream quirks (issue 27) -----------------------------------------------------------
// Shapes real upstreams send that the plain replies above never do, each beside the field
// report or the source it comes from, so that tests and the runtime fuzzer feed the Worker
// the real ones. A script step {"quirk": NAME, ...fields} sends one as one network chunk
// (QUIRK_STEPS); AI_QUIRKS, or a script that generates, makes generated replies carry some
// (REPLY_QUIRKS). Numbers arrive as lexeme strings and are written into the JSON text as
// they are: a JS number would lose its lexeme (1.10 becomes 1.1, 1e400 Infinity), and the
// lexeme is what a reader must keep.

// A payload holds RAW where raw JSON text goes (only one place per payload).
const RAW = "\u0000raw\u0000";
const rawJson = (payload, raw) => JSON.stringify(payload).replace(JSON.stringify(RAW), () => raw);
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
const isString = (value) => typeof value === "string";
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
const errorPayload = (step) => JSON.stringify({ error: errorInfo(step) });

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

function quirkText(step, model) {
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
const FINISH_ALIASES = { length: "max_tokens", stop: "eos" };
// A made-up fragment whose numbers are tokens of their own: a price, a lexeme a float
// would change, a citation.
const NUMBER_FRAGMENT = ["It costs ", "0.005", " dollars, about ", "1.10", " euros [", "1", "]. "];

function replyQuirks(names, where) {
  const quirks = new Set();
  for (const name of names) {
    if (!REPLY_QUIRKS.includes(name)) throw new Error(`${where}: unknown quirk ${JSON.stringify(name)}; known: ${REPLY_QUIRKS.join(", ")}`);
    quirks.add(name);
  }
  return quirks;
}

// AI_QUIRKS "numbers": the reply opens with NUMBER_FRAGMENT, and a number after spaces
// (a prose table's " 2") becomes a token of its own, so the frames send it raw.
function withNumberTokens(nextToken) {
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

const sentAsNumber = (reply, token) => reply.json === null && reply.quirks.has("numbers") && JSON_NUMBER.test(token);

function base64Bytes(text) {
  const binary = atob(text);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

class ScriptedStreamError extends Error {}

// A `held` step waits until the test releases it: the address AI_SCRIPT_URL + "/released/"
// + name answers 200 once it has (tests/harness/pool.py), so an answer is still being
// written when the test acts, however slow the machine, instead of hoping it is slow enough.
async function untilReleased(env, name) {
  if (!env.AI_SCRIPT_URL) throw new Error("a held step needs AI_SCRIPT_URL (the test harness)");
  const address = `${env.AI_SCRIPT_URL}/released/${encodeURIComponent(name)}`;
  while ((await fetch(address)).status !== 200) await sleep(25);
}

async function* scriptedChunks(inputs, script, model, env) {
  for (const step of script.steps ?? []) {
    if (step.quirk !== undefined) yield encoder.encode(quirkText(step, model));
    else if (step.sleep_ms !== undefined) await sleep(step.sleep_ms);
    else if (step.send_b64 !== undefined) yield base64Bytes(step.send_b64);
    else if (step.repeat !== undefined) for (let i = 0; i < step.repeat; i++) yield encoder.encode(step.send);
    else if (step.send !== undefined) yield encoder.encode(step.send);
    else if (step.echo) yield sseFrame({ response: lastUserContent(inputs.messages ?? []), p: "" });
    else if (step.transcript) yield sseFrame({ response: transcript(inputs.messages ?? []), p: "" });
    else if (step.error !== undefined) throw new ScriptedStreamError(step.error);
    else if (step.held !== undefined) await untilReleased(env, step.held);
    else if (step.hang) for (;;) await sleep(60_000); // a timer stays pending: workerd would cancel a bare never-resolving promise
    else throw new Error(`unknown script step: ${JSON.stringify(step)}`);
  }
}

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

// The binding's failures, as "<code>: <description>" (workers-ai/platform/errors).
class InferenceUpstreamError extends Error {
  constructor(code, description) {
    super(`${code}: ${description}`);
    this.name = "InferenceUpstreamError";
  }
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

// --- JSON mode (response_format) ----------------------------------------------------------
// The catalog's json_mode says how a model takes response_format (null: its schema takes
// none). Checked 2026-12-02:
// - shape "openai", the chat-completions schemas of the model pages (cloudflare-docs
//   src/content/workers-ai-models/<model>.json): {"type": "text"}, {"type": "json_object"}
//   or {"type": "json_schema", "json_schema": {"name", "description"?, "schema"?, "strict"?}};
//   anything else breaks the schema: 8001 (as thinkingTokens and toolSettings refuse).
// - shape "cloudflare", the older "JSON Mode" schemas and
//   developers.cloudflare.com/workers-ai/features/json-mode/: {"type": "json_object" |
//   "json_schema", "json_schema": <the JSON Schema itself, any value>}. "JSON Mode currently
//   doesn't support streaming": with stream the binding throws "5023: JSON Schema mode is not
//   supported with stream mode." (cloudflare/agents issue #1685, 2026-06-05, llama-3.3-70b-
//   fp8-fast and llama-4-scout); the catalog marks these `streams: false`.
// - a model without JSON mode given json_object or json_schema: "5025: This model doesn't
//   suuport JSON Schema." (the binding's own spelling; cloudflare-docs issue #21316,
//   2025-04-02). {"type": "text"} is accepted by every model.
// - "JSON Mode couldn't be met" (the JSON-mode page) has no documented code: not emulated.
const JSON_KINDS = ["json_object", "json_schema"];

// The JSON mode of a call, {type, name?, shape, schema}, or null for prose (no
// response_format, or type "text"). Throws what the binding throws for one it refuses.
function jsonMode(entry, inputs) {
  const format = inputs.response_format;
  if (format === undefined || format === null) return null;
  const invalid = () => new InferenceUpstreamError(8001, "Invalid input");
  if (!isPlainObject(format) || !["text", ...JSON_KINDS].includes(format.type)) throw invalid();
  if (format.type === "text") return null;
  const mode = entry.json_mode ?? null;
  if (mode === null || !mode.kinds.includes(format.type)) throw new InferenceUpstreamError(5025, "This model doesn't suuport JSON Schema.");
  let name, schema = null;
  if (format.type === "json_schema" && mode.shape === "openai") {
    const spec = format.json_schema;
    const optional = (key, accepts) => spec[key] === undefined || accepts(spec[key]);
    if (!isPlainObject(spec) || typeof spec.name !== "string" || !optional("description", isString)
      || !optional("schema", isPlainObject) || !optional("strict", (value) => value === null || typeof value === "boolean")) throw invalid();
    name = spec.name;
    schema = spec.schema ?? null;
  } else if (format.type === "json_schema") {
    schema = format.json_schema ?? null;
  }
  if (inputs.stream && !mode.streams) throw new InferenceUpstreamError(5023, "JSON Schema mode is not supported with stream mode.");
  return { type: format.type, ...(name !== undefined ? { name } : {}), shape: mode.shape, schema };
}

// What the ai_run record says of a response_format: its type, its name (openai shape), the
// model's shape; never the schema.
function describeResponseFormat(entry, inputs) {
  const format = inputs?.response_format;
  if (format === undefined || format === null) return {};
  const shape = entry.json_mode?.shape ?? null;
  const name = shape === "openai" ? stringOrNull(format?.json_schema?.name) : null; // Cloudflare's json_schema is the schema
  return { response_format: { type: stringOrNull(format?.type), ...(name !== null ? { name: name.slice(0, 64) } : {}), shape } };
}

const JSON_OBJECT_WORDS = 12;

// The answer's JSON text. json_schema: a value built from the schema (exampleValue, deep);
// json_object, or a schema that is none: {"answer": <the reply's first words>}, with the
// start of a tool's result after one, and the images' sentence when there are images, so a
// test sees that they reached the model.
function jsonAnswer(output, messages, nextWord, random, seen) {
  if (output.type === "json_schema" && isPlainObject(output.schema)) {
    return JSON.stringify(exampleValue(output.schema, { deep: true })) ?? "null";
  }
  let words = "";
  for (let i = 0; i < JSON_OBJECT_WORDS; i++) words += nextWord();
  const result = toolResultTokens(messages, random).slice(1).join("");
  return JSON.stringify({ answer: words.trim(), ...(result ? { tool_result: result } : {}),
    ...(seen.length > 0 ? { images: imageSentence(seen) } : {}) });
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

const stringOrNull = (value) => (typeof value === "string" ? value : null);

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
