// Images (issue 30): a call's image parts, each one's format and pixel size read from its
// header bytes, and what the binding refuses.

import { base64Bytes, InferenceUpstreamError } from "./common.js";

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
export function imageParts(messages) {
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
export function imagesSeen(entry, parts) {
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
export function imageSentence(seen) {
  const named = seen.length === 1 ? seen[0] : `${seen.slice(0, -1).join(", ")} and ${seen[seen.length - 1]}`;
  return `I see ${named}.`;
}

// What the ai_run record says of the images: how many, and their decoded bytes in all
// (of those that are base64 data URLs); never a byte of them.
export function describeImages(parts) {
  return { images: parts.length, image_bytes: parts.reduce((total, part) => total + (part.payload?.size ?? 0), 0) };
}
