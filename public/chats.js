// The page's conversations, kept in this browser: each chat under its own localStorage key,
// listed newest first in an index, at most MAX_CHATS of them (the oldest go first, also
// when the browser's quota is full). Which chat a tab has open, and the answer it waits
// for, is the tab's own (sessionStorage), so two tabs never resume each other's answers.
// Nothing here is sent anywhere; a chat never holds the access token. An image is kept as
// its description and a small thumbnail (images.js), never its bytes: a chat that would
// pass its bound drops its oldest thumbnails first.
//
// Two tabs may have one chat open. A save never overwrites what another tab saved since
// this tab last read or wrote the chat: it reports a conflict, and the page keeps its own
// turns as a chat of their own (app.js), so neither tab's turns are lost.
import { MAX_IMAGES, carriedImages, isImage, placeholder } from "./images.js";

const INDEX_KEY = "chat-page-chats-v1";
const CHAT_PREFIX = "chat-page-chat-v1:";
const TAB_KEY = "chat-page-v1";
const MAX_CHATS = 50;
// A chat larger than this is not kept: localStorage holds about 5 MB per site in all.
const MAX_CHAT_CHARS = 1_000_000;
const TITLE_CHARS = 80;

const isText = (value) => typeof value === "string";

/** An entry as the page saves it, and nothing else (storage is shared with other scripts
 * of the site, and can be edited by hand). */
function isEntry(entry) {
  switch (entry?.role) {
    case "user":
      return isText(entry.content)
        && (entry.images === undefined || (Array.isArray(entry.images) && entry.images.length <= MAX_IMAGES && entry.images.every(isImage)));
    case "assistant":
      return isText(entry.content)
        && (entry.tool_calls === undefined || (Array.isArray(entry.tool_calls) && entry.tool_calls.every(
          (call) => isText(call?.id) && isText(call.function?.name) && isText(call.function.arguments))))
        && (entry.incomplete === undefined || (isText(entry.incomplete?.kind) && isText(entry.incomplete.notice)));
    case "tool":
      return isText(entry.tool_call_id) && isText(entry.content);
    default:
      return false;
  }
}

/** The image each image part of requestMessages' messages carries (its entry in the
 * chat), so that a refusal naming the part can name the image. */
export const imageOfPart = new WeakMap();

/**
 * The messages sent for the next answer. A complete answer goes back as it was sent; one
 * that did not complete goes back with the text the user saw, so the model knows what it
 * already said. One with no text at all is left out with the user message it answered,
 * so that the history never has two user messages in a row.
 *
 * A user message with images has a list of parts: its text, then an image part for each
 * image the request carries (the newest, within the Worker's bounds: images.js's
 * carriedImages) and a text placeholder for each other. `held(id)` is an image's data
 * URL while this page holds it, else falsy.
 */
export function requestMessages(entries, held = () => null) {
  const carried = carriedImages(entries, held);
  const messages = [];
  for (const entry of entries) {
    if (entry.role === "user") {
      // A question left without an answer (a reload before it began, a chat saved from
      // another tab) gives way to the one after it.
      if (messages.at(-1)?.role === "user") messages.pop();
      messages.push({ role: "user", content: entry.images?.length ? userParts(entry, carried, held) : entry.content });
    }
    else if (entry.role === "tool") messages.push({ role: "tool", tool_call_id: entry.tool_call_id, content: entry.content });
    else if (entry.incomplete && !entry.content.trim()) {
      if (messages.at(-1)?.role === "user") messages.pop();
    } else if (entry.tool_calls && !entry.incomplete) {
      messages.push({ role: "assistant", content: entry.content, tool_calls: entry.tool_calls });
    } else {
      messages.push({ role: "assistant", content: entry.content });
    }
  }
  return messages;
}

function userParts(entry, carried, held) {
  const parts = entry.content.trim() ? [{ type: "text", text: entry.content }] : [];
  for (const image of entry.images) {
    if (!carried.has(image.id)) {
      parts.push({ type: "text", text: placeholder(image) });
      continue;
    }
    const part = { type: "image_url", image_url: { url: held(image.id) } };
    imageOfPart.set(part, image);
    parts.push(part);
  }
  return parts;
}

/** The chat's JSON as kept, within MAX_CHAT_CHARS, or null when it cannot fit. Past the
 * bound, the oldest images lose their thumbnails first (their description stays, and the
 * page shows it instead); the chat on screen keeps them. */
function keptText(entries) {
  const text = JSON.stringify({ entries });
  if (text.length <= MAX_CHAT_CHARS) return text;
  const kept = entries.map((entry) => (entry.images ? { ...entry, images: entry.images.map((image) => ({ ...image })) } : entry));
  let excess = text.length - MAX_CHAT_CHARS;
  for (const image of kept.flatMap((entry) => entry.images ?? [])) {
    if (excess <= 0) break;
    if (image.thumb === undefined) continue;
    excess -= JSON.stringify(image.thumb).length + ',"thumb":'.length;
    delete image.thumb;
  }
  const trimmed = JSON.stringify({ entries: kept });
  return trimmed.length <= MAX_CHAT_CHARS ? trimmed : null;
}

function readJson(storage, key) {
  try {
    return JSON.parse(storage.getItem(key) ?? "null");
  } catch {
    return null;
  }
}

function newId() {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

export class ChatStore {
  constructor(local, session) {
    this.local = local;
    this.session = session;
    this.seen = new Map(); // chat id -> its text as this tab last read or wrote it
  }

  /** The storage key of `chat`, whose `storage` events tell another tab saved it. */
  keyOf(chat) {
    return CHAT_PREFIX + chat.id;
  }

  /** A new, empty chat: listed once it has a turn. */
  create() {
    return { id: newId(), entries: [] };
  }

  /** [{id, title, updated}], newest first. */
  list() {
    const index = readJson(this.local, INDEX_KEY);
    return Array.isArray(index) ? index.filter((chat) => isText(chat?.id) && isText(chat.title) && Number.isFinite(chat.updated)) : [];
  }

  /** The chat kept under `id`, or null. `adopt`: this tab now has what is stored, so its
   * next save may overwrite it (false: only a look at another tab's save). */
  load(id, { adopt = true } = {}) {
    let text = null;
    let saved = null;
    try {
      text = this.local.getItem(CHAT_PREFIX + id);
      saved = JSON.parse(text ?? "null");
    } catch {
      return null;
    }
    if (!saved || !Array.isArray(saved.entries) || !saved.entries.every(isEntry)) return null;
    if (adopt) this.seen.set(id, text);
    return { id, entries: saved.entries };
  }

  /** A copy of `chat` under a new id, for the turns of this tab when another tab saved
   * the same chat meanwhile. */
  fork(chat) {
    return { ...chat, id: newId() };
  }

  /** Keeps `chat` and puts it first in the list. Returns "kept"; "too_large" or "full"
   * when it could not be kept (the page works on without it); "conflict" when another tab
   * saved this chat since this one last read or wrote it (nothing is written then). */
  save(chat) {
    if (chat.entries.length === 0) return "kept";
    let stored = null;
    try {
      stored = this.local.getItem(CHAT_PREFIX + chat.id);
    } catch {
      return "full";
    }
    if (stored !== null && this.seen.has(chat.id) && stored !== this.seen.get(chat.id)) return "conflict";
    const text = keptText(chat.entries);
    if (text === null) return "too_large";
    const first = chat.entries.find((entry) => entry.role === "user");
    const words = first?.content.replace(/\s+/g, " ").trim() || (first?.images?.length ? `Image: ${first.images[0].name}` : "");
    const title = words.slice(0, TITLE_CHARS) || "Untitled";
    let index = [{ id: chat.id, title, updated: Date.now() }, ...this.list().filter((other) => other.id !== chat.id)];
    for (const dropped of index.splice(MAX_CHATS)) this.local.removeItem(CHAT_PREFIX + dropped.id);
    for (;;) {
      try {
        this.local.setItem(CHAT_PREFIX + chat.id, text);
        this.local.setItem(INDEX_KEY, JSON.stringify(index));
        this.seen.set(chat.id, text);
        return "kept";
      } catch {
        // Quota: the oldest other chat makes room, until there is none left to drop.
        if (index.length <= 1) {
          this.local.removeItem(CHAT_PREFIX + chat.id);
          this.seen.delete(chat.id);
          return "full";
        }
        this.local.removeItem(CHAT_PREFIX + index.pop().id);
      }
    }
  }

  /** Forgets every chat. */
  clear() {
    for (const { id } of this.list()) this.local.removeItem(CHAT_PREFIX + id);
    this.local.removeItem(INDEX_KEY);
    this.session.removeItem(TAB_KEY);
    this.seen.clear();
  }

  /** This tab has `chat` open. */
  setOpen(chat) {
    this.writeTab({ chatId: chat.id, pending: null });
  }

  /** The answer this tab waits for in `chat` ({streamId, round}), or null once it settled. */
  setPending(chat, pending) {
    const tab = readJson(this.session, TAB_KEY);
    if (pending === null && tab?.chatId !== chat.id) return; // the tab moved to another chat
    this.writeTab({ chatId: chat.id, pending });
  }

  /** The chat this tab had open ({chat, pending}), after a reload. */
  opened() {
    const tab = readJson(this.session, TAB_KEY);
    const chat = isText(tab?.chatId) ? this.load(tab.chatId) : null;
    const pending = tab?.pending;
    const valid = pending && isText(pending.streamId) && Number.isSafeInteger(pending.round);
    return { chat, pending: chat && valid ? pending : null };
  }

  writeTab(tab) {
    try {
      this.session.setItem(TAB_KEY, JSON.stringify(tab));
    } catch {
      // Storage disabled: the page works on, it only cannot resume after a reload.
    }
  }
}
