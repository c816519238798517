// Images a user attaches to a turn (issue 30): read and checked in the page before
// anything is sent, a small thumbnail made for the conversation and the saved chat, and
// the rule that decides which images a request carries on later turns. No network: an
// image is only ever a data: URL of the user's own bytes (a blob: URL at most), so the
// page loads nothing remote.
//
// The bounds are the Worker's (src/chat/api/images.py, docs/images.md), checked here
// first so that a file the Worker would refuse costs no upload and is explained at once,
// beside the composer.
export const MAX_IMAGES = 8; // per request
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024; // per image, decoded
export const MAX_REQUEST_IMAGE_BYTES = 6 * 1024 * 1024; // per request, decoded (the Worker's, src/chat/api/images.py)
const MAX_IMAGE_SIDE = 8192;
const MAX_IMAGE_PIXELS = 4096 * 4096;
const MAX_JPEG_SEGMENTS = 1000; // as the Worker: real files have a few dozen
// The formats the vision models take, by their signatures: the type is read from the
// bytes, never from the file's name or the type the browser guessed from it.
export const FORMATS = { "image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WebP", "image/gif": "GIF" };
const FORMATS_NAMED = "PNG, JPEG, WebP or GIF";
// A name longer than this is shortened: it is shown, kept and sent in placeholders.
const NAME_CHARS = 80;

// The thumbnail kept with the chat (localStorage) so that a reload still shows the image:
// at most THUMB_SIDE pixels a side, WebP (JPEG where the browser cannot write WebP), and
// at most THUMB_CHARS characters of data URL; a busier picture is made smaller until it
// fits, so a kept image never costs more than that.
const THUMB_SIDE = 256;
const THUMB_QUALITY = 0.8;
export const THUMB_CHARS = 48_000;
// A kept thumbnail is a data URL of one of these types and nothing else (storage can be
// edited by hand; an <img> of anything else could load a resource).
export const THUMB_URL = /^data:image\/(?:webp|jpeg|png);base64,[A-Za-z0-9+/]+={0,2}$/;

/** A file the page does not attach; the message says why, in the user's terms. */
export class AttachRefusal extends Error {}

// Rounded up, so that a file a byte over a bound never reads as exactly the bound.
const mib = (bytes) => `${(Math.ceil(bytes / 1024 / 1024 * 10) / 10).toFixed(1).replace(/\.0$/, "")} MiB`;

/** "a 3×2 PNG": an image as the Worker and the model describe it. */
export function describe(image) {
  return `a ${image.width}\u00d7${image.height} ${FORMATS[image.type]}`;
}

/** The text part sent instead of an image the request does not carry. */
export function placeholder(image) {
  return `[image not re-sent: ${image.name}, ${describe(image)}]`;
}

function shortName(name) {
  const clean = String(name || "image").replace(/[\u0000-\u001f\u007f]/g, "").trim() || "image";
  return clean.length > NAME_CHARS ? `${clean.slice(0, NAME_CHARS - 1)}…` : clean;
}

/**
 * Reads `file` for attaching beside `attached` (the images already in the composer):
 * {image: {id, name, type, width, height, size, thumb}, dataUrl}. Throws AttachRefusal
 * for a file past a bound, of another format, or that does not decode.
 */
export async function readAttachment(file, attached) {
  const name = shortName(file.name);
  const refuse = (why) => new AttachRefusal(`“${name}” was not attached: ${why}`);
  if (attached.length >= MAX_IMAGES) throw refuse(`a message may carry at most ${MAX_IMAGES} images.`);
  if (file.size > MAX_IMAGE_BYTES) throw refuse(`it is ${mib(file.size)}, and an image may be at most ${mib(MAX_IMAGE_BYTES)}.`);
  const total = attached.reduce((sum, image) => sum + image.size, 0) + file.size;
  if (total > MAX_REQUEST_IMAGE_BYTES) {
    throw refuse(`the images of a message may total at most ${mib(MAX_REQUEST_IMAGE_BYTES)}, and with it they would be ${mib(total)}.`);
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  let header;
  try {
    header = readHeader(bytes);
  } catch (problem) {
    if (problem instanceof AttachRefusal) throw refuse(problem.message);
    throw problem;
  }
  const { type, width, height } = header;
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE || width * height > MAX_IMAGE_PIXELS) {
    throw refuse(`it is ${width}\u00d7${height} pixels, and an image may be at most ${MAX_IMAGE_SIDE} a side and ${MAX_IMAGE_PIXELS.toLocaleString("en")} in all.`);
  }
  const blob = new Blob([bytes], { type }); // the type its bytes show, not the name's
  let thumb;
  try {
    thumb = await thumbnail(blob);
  } catch {
    throw refuse(`its ${FORMATS[type]} data could not be read.`);
  }
  const image = { id: newId(), name, type, width, height, size: bytes.length, thumb };
  return { image, dataUrl: await dataUrlOf(blob) };
}

function newId() {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

function dataUrlOf(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

/** A data URL of the image scaled to THUMB_SIDE at most (never up), within THUMB_CHARS. */
async function thumbnail(blob) {
  const bitmap = await createImageBitmap(blob);
  // The decoded size, not the header's: a JPEG's EXIF orientation may have turned it.
  const { width, height } = bitmap;
  try {
    for (let side = THUMB_SIDE; ; side = Math.floor(side * 0.7)) {
      const scale = Math.min(1, side / Math.max(width, height));
      const canvas = document.createElement("canvas");
      canvas.width = Math.max(1, Math.round(width * scale));
      canvas.height = Math.max(1, Math.round(height * scale));
      const context = canvas.getContext("2d");
      context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
      let url = canvas.toDataURL("image/webp", THUMB_QUALITY);
      if (!url.startsWith("data:image/webp")) {
        // No WebP encoder (Safari gives PNG instead): JPEG, over white, as it has no alpha.
        context.globalCompositeOperation = "destination-over";
        context.fillStyle = "#fff";
        context.fillRect(0, 0, canvas.width, canvas.height);
        url = canvas.toDataURL("image/jpeg", THUMB_QUALITY);
      }
      if (url.length <= THUMB_CHARS || side <= 32) return url;
    }
  } finally {
    bitmap.close();
  }
}

// --- the header: format and pixel size, from the bytes (as src/chat/api/images.py) ----------

const startsWith = (bytes, signature, at = 0) => signature.every((value, index) => bytes[at + index] === value);
const ascii = (text) => [...text].map((c) => c.charCodeAt(0));

function uint(bytes, at, size, littleEndian) {
  if (bytes.length < at + size) throw new AttachRefusal("its header is cut short.");
  let value = 0;
  for (let i = 0; i < size; i++) value = value * 256 + bytes[littleEndian ? at + size - 1 - i : at + i];
  return value;
}

/** {type, width, height} from an image's first bytes. Throws AttachRefusal for bytes of
 * no format the models take, or a header cut short or declaring no pixels. */
export function readHeader(bytes) {
  let type;
  let width;
  let height;
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) {
    type = "image/png";
    if (!startsWith(bytes, ascii("IHDR"), 12)) throw new AttachRefusal("its PNG header is malformed.");
    [width, height] = [uint(bytes, 16, 4), uint(bytes, 20, 4)];
  } else if (startsWith(bytes, [0xff, 0xd8, 0xff])) {
    type = "image/jpeg";
    [width, height] = jpegSize(bytes);
  } else if (startsWith(bytes, ascii("RIFF")) && startsWith(bytes, ascii("WEBP"), 8)) {
    type = "image/webp";
    [width, height] = webpSize(bytes);
  } else if (startsWith(bytes, ascii("GIF87a")) || startsWith(bytes, ascii("GIF89a"))) {
    type = "image/gif";
    [width, height] = [uint(bytes, 6, 2, true), uint(bytes, 8, 2, true)];
  } else {
    throw new AttachRefusal(`its bytes are not a ${FORMATS_NAMED} image.`);
  }
  if (width === 0 || height === 0) throw new AttachRefusal(`its ${FORMATS[type]} header declares no pixels.`);
  return { type, width, height };
}

// Start-of-frame markers (ITU T.81, B.1.1.3): SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC).
const JPEG_FRAMES = new Set([...Array(16).keys()].map((i) => 0xc0 + i).filter((m) => ![0xc4, 0xc8, 0xcc].includes(m)));

function jpegSize(bytes) {
  let at = 2;
  for (let segment = 0; segment < MAX_JPEG_SEGMENTS && at + 2 <= bytes.length; segment++) {
    if (bytes[at] !== 0xff) break;
    const marker = bytes[at + 1];
    if (marker === 0xff) {
      at += 1;
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) break;
    const length = uint(bytes, at + 2, 2);
    if (length < 2) break;
    if (JPEG_FRAMES.has(marker)) return [uint(bytes, at + 7, 2), uint(bytes, at + 5, 2)];
    at += 2 + length;
  }
  throw new AttachRefusal("its JPEG has no readable frame header.");
}

function webpSize(bytes) {
  // RFC 9649: the first chunk is VP8 (lossy), VP8L (lossless) or VP8X (extended).
  if (startsWith(bytes, ascii("VP8 "), 12)) {
    if (!startsWith(bytes, [0x9d, 0x01, 0x2a], 23)) throw new AttachRefusal("its WebP header is malformed.");
    return [uint(bytes, 26, 2, true) & 0x3fff, uint(bytes, 28, 2, true) & 0x3fff];
  }
  if (startsWith(bytes, ascii("VP8L"), 12)) {
    const bits = uint(bytes, 21, 4, true);
    return [(bits & 0x3fff) + 1, Math.floor(bits / 0x4000) % 0x4000 + 1];
  }
  if (startsWith(bytes, ascii("VP8X"), 12)) return [uint(bytes, 24, 3, true) + 1, uint(bytes, 27, 3, true) + 1];
  throw new AttachRefusal("its WebP header is malformed.");
}

// --- which images a request carries -------------------------------------------------------

/**
 * The images of a conversation that its next request carries: a Set of image ids. Every
 * request is held to the Worker's bounds, on the twentieth turn as on the first, so the
 * images go newest first while they fit (MAX_IMAGES, MAX_REQUEST_IMAGE_BYTES); from the
 * first that does not fit, every older one goes as a placeholder (the model sees the
 * latest images, not a gap-toothed selection). An image whose bytes this page no longer
 * holds (`held(id)` is falsy: the page was reloaded) goes as a placeholder too, and takes
 * nothing from the bounds.
 */
export function carriedImages(entries, held) {
  const carried = new Set();
  let count = 0;
  let bytes = 0;
  for (let index = entries.length - 1; index >= 0; index--) {
    for (const image of entries[index].role === "user" ? entries[index].images ?? [] : []) {
      if (!held(image.id)) continue;
      if (count + 1 > MAX_IMAGES || bytes + image.size > MAX_REQUEST_IMAGE_BYTES) return carried;
      count += 1;
      bytes += image.size;
      carried.add(image.id);
    }
  }
  return carried;
}

/** Whether `image` is an image entry as the page keeps it. */
export function isImage(image) {
  return typeof image?.id === "string" && typeof image.name === "string" && Object.hasOwn(FORMATS, String(image.type))
    && [image.width, image.height, image.size].every((n) => Number.isSafeInteger(n) && n > 0)
    && (image.thumb === undefined || (typeof image.thumb === "string" && THUMB_URL.test(image.thumb)));
}
