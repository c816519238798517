// What the emulator's modules share: the binding's error, a message's text, type checks,
// bytes from base64, the text encoder and sleep.

export const encoder = new TextEncoder();

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A message's text: a string, or the text parts of a content array joined by newlines (as
// the Worker joins a list of text parts it sends as a string, chat/api/validation.py), so a
// text reads the same whichever way it came; image parts carry none.
export function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.filter((part) => typeof part?.text === "string").map((part) => part.text).join("\n");
  return content === undefined || content === null ? "" : String(content);
}

export const isPlainObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

export const isString = (value) => typeof value === "string";

export function base64Bytes(text) {
  const binary = atob(text);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

// The binding's failures, as "<code>: <description>" (workers-ai/platform/errors).
export class InferenceUpstreamError extends Error {
  constructor(code, description) {
    super(`${code}: ${description}`);
    this.name = "InferenceUpstreamError";
  }
}

export const stringOrNull = (value) => (typeof value === "string" ? value : null);
