// Tool calling: the binding's checks of the tool inputs, which tools the fake model calls,
// and example values from JSON Schema (a call's arguments, and JSON mode's answers).

import { contentText, InferenceUpstreamError, isPlainObject } from "./common.js";
import { pieces } from "./random.js";

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
export function toolSettings(entry, inputs) {
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
export function plannedToolCalls(tooling, messages) {
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

export function exampleValue(schema, { deep = false, root = schema } = {}) {
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

// The calls the reply makes, each with its id and its arguments as streamed fragments (one
// completion token each), within what the token budget leaves after thinking: a call the
// budget cuts short keeps the fragments that fit and the answer ends with "length".
export function toolCallsFor(wanted, random, allowance) {
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
