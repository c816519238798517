// JSON mode (response_format): the binding's checks of it against the model's json_mode,
// and the JSON text a generated reply answers with.

import { InferenceUpstreamError, isPlainObject, isString, stringOrNull } from "./common.js";
import { exampleValue } from "./tools.js";
import { imageSentence } from "./images.js";
import { toolResultTokens } from "./prose.js";

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
export function jsonMode(entry, inputs) {
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
export function describeResponseFormat(entry, inputs) {
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
export function jsonAnswer(output, messages, nextWord, random, seen) {
  if (output.type === "json_schema" && isPlainObject(output.schema)) {
    return JSON.stringify(exampleValue(output.schema, { deep: true })) ?? "null";
  }
  let words = "";
  for (let i = 0; i < JSON_OBJECT_WORDS; i++) words += nextWord();
  const result = toolResultTokens(messages, random).slice(1).join("");
  return JSON.stringify({ answer: words.trim(), ...(result ? { tool_result: result } : {}),
    ...(seen.length > 0 ? { images: imageSentence(seen) } : {}) });
}
