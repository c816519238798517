// The chat page: streams each answer with chat-stream.js and renders it as markdown while
// it streams (markdown.js: no raw HTML, https links only, no images); everything else the
// model writes (reasoning, tool calls) and everything the user writes is shown as text.
// It offers the model the built-in tools of tools.js and runs the calls the model makes.
// Conversations are kept in this browser (chats.js) and listed under "Chats". Images
// are attached in the composer (attachments.js, images.js) and shown in the user's bubble.
import { streamChat } from "./chat-stream.js";
import { MarkdownView } from "./markdown.js";
import { ChatStore, imageOfPart, requestMessages } from "./chats.js";
import { Attachments } from "./attachments.js";
import { describe } from "./images.js";
import { ERROR_PREFIX, TOOL_DEFINITIONS, runToolCall } from "./tools.js";

const REASONING_EFFORT = "low";
const $ = (id) => document.getElementById(id);
const form = $("composer");
const input = $("input");
const sendButton = $("send");
const stopButton = $("stop");
const messagesList = $("messages");
const transcript = $("transcript");
const statusLine = $("status");
const modelLine = $("model");
const emptyHint = $("empty");
const storageNotice = $("storage-notice");
const settings = $("settings");
const tokenInput = $("token");
const chatsMenu = $("chats");
const chatList = $("chat-list");
const attachments = new Attachments({
  form, input, button: $("attach"), fileInput: $("image-file"), list: $("attachments"), notice: $("attach-notice"),
});
// The bytes of the images sent from this page (image id -> data URL), for this page's life
// only: a chat keeps a thumbnail and a description of each (chats.js), so after a reload
// an image goes back to the model as a placeholder. One that went as a placeholder for
// want of room (past the Worker's bounds, images.js's carriedImages) is let go: newer
// images only come after it.
const heldImages = new Map();
const held = (id) => heldImages.get(id);

// The access token lives in sessionStorage: it survives a reload of this tab and is gone
// when the tab closes; it is only ever sent in the Authorization header, never in a URL.
const TOKEN_KEY = "chat-access-token";
tokenInput.value = sessionStorage.getItem(TOKEN_KEY) ?? "";
tokenInput.addEventListener("input", () => {
  const token = tokenInput.value.trim();
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
});

function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { authorization: `Bearer ${token}` } : {};
}

const store = new ChatStore(localStorage, sessionStorage);
// The open conversation: {id, entries}. Entries are the turns as sent ({role: "user"},
// {role: "assistant", content, tool_calls?}, {role: "tool"}), plus answers that are not
// whole ({role: "assistant", content, incomplete: {kind, notice, retry, requestId}, with
// `continue: true` when Continue is offered and `skipped` when frames were lost}), kept
// so that a stopped, failed or cut answer survives a reload with its notice; chats.js's
// requestMessages decides what of them is sent back to the model.
let chat = store.create();
// Answers that call tools are answered again automatically with the results, at most this
// many times after one user message, so that a model that keeps calling tools cannot keep
// the page busy for ever.
const MAX_TOOL_ROUNDS = 5;
let active = null; // {controller, chat} while an answer streams
let retryTimer = null; // the countdown of a rate-limited Retry

// Codes with their own wording; any other code shows the server's (generic) message.
const BEFORE_STREAM_TEXT = {
  payload_too_large: "Your message is too long. Shorten it and send it again.",
  // The Worker's own limit on this client, and the model's capacity (Workers AI 3040):
  // two codes since 2026-12-02, and neither is the user's fault.
  rate_limited: "You have sent too many messages in a short time.",
  model_busy: "The model is busy right now.",
  model_misconfigured: "This server's model setting is out of date; its operator needs to update it.",
  unauthorized: "This server needs a valid access token: enter it under Settings, then retry.",
  origin_not_allowed: "This page is not allowed to use the chat API.",
  model_unavailable: "The model is not available right now.",
  upstream_timeout: "The model did not start answering in time.",
  network_error: "Could not reach the server. Check your connection.",
};
// Retrying cannot help these: the same request would be refused the same way.
const NOT_RETRYABLE = new Set(["payload_too_large", "invalid_request", "invalid_json", "unsupported_media_type", "origin_not_allowed",
  "model_misconfigured"]);
// These mean the model never saw the turn, so it leaves the conversation and goes back
// into the input box to be edited.
const REFUSED_TURN = new Set(["payload_too_large", "invalid_request"]);
// An answer that ended with `done` but is not whole (chat-stream.js's `cut`): its notice,
// with text and without. Only one cut by the length limit can be continued: a filtered
// answer would be filtered again, and one ended for an unknown reason may have been whole.
const CUT_TEXT = {
  length: { text: "The answer was cut off at the length limit.", empty: "The model used its whole token budget before it answered." },
  content_filter: { text: "The answer was cut short by the provider's content filter.", empty: "The provider's content filter stopped the answer before any text." },
  other: { text: "The model ended the answer for an unknown reason; it may be incomplete.", empty: "The model ended without answering, for an unknown reason." },
};
// What Continue asks. The protocol takes no request that ends with the assistant's own
// message (a prefill that the model would extend: vLLM needs `continue_final_message`,
// which Workers AI does not take), so the cut answer goes as the assistant's message and
// this as a user message after it. It is sent with that request only: never shown, never
// kept, so the next turn's history has the joined answer and no trace of the asking.
const CONTINUE_PROMPT = "Continue exactly where you stopped, mid-sentence if need be. Do not repeat anything and do not add an introduction.";

/** The notice sentence for `skipped` upstream frames the Worker could not read. */
function gapsText(skipped) {
  return `Part of the model's output could not be read (${skipped} ${skipped === 1 ? "frame" : "frames"}), so the answer may have gaps.`;
}

// --- the transcript -------------------------------------------------------------------------

function addMessage(role, text, turn, { scroll = true, images = [] } = {}) {
  emptyHint.hidden = true;
  const item = document.createElement("li");
  item.className = `message ${role}`;
  item.dataset.turn = String(turn); // the index of the user entry this message belongs to
  const author = document.createElement("span");
  author.className = "author";
  author.textContent = role === "user" ? "You" : "Assistant";
  const content = document.createElement("div");
  content.className = "content";
  item.append(author, content);
  if (images.length) content.before(imageStrip(images));
  if (role === "user") content.textContent = text; // text, never HTML
  else viewOf(item).show(text);
  messagesList.append(item);
  if (scroll) scrollToEnd(true);
  return item;
}

/** The images of a user's message: each its kept thumbnail (a data: URL, checked when the
 * chat was loaded: nothing remote is ever loaded), or its description when the thumbnail
 * was dropped to keep the chat within its bound. */
function imageStrip(images) {
  const strip = document.createElement("div");
  strip.className = "message-images";
  for (const image of images) {
    const what = `${image.name}, ${describe(image)}`;
    if (image.thumb) {
      const img = document.createElement("img");
      img.src = image.thumb;
      img.alt = what;
      img.title = image.name;
      strip.append(img);
    } else {
      const gone = document.createElement("span");
      gone.className = "image-gone";
      gone.textContent = what; // a file's name: text
      gone.title = "Only the description of this image was kept.";
      strip.append(gone);
    }
  }
  return strip;
}

const views = new WeakMap(); // assistant item -> its MarkdownView
function viewOf(item) {
  // A long answer's later parts render after the chat is drawn: the end stays in view if it was.
  const keepPlace = (render) => { const atEnd = nearEnd(); render(); if (atEnd) scrollToEnd(true); };
  if (!views.has(item)) views.set(item, new MarkdownView(item.querySelector(".content"), { keepPlace }));
  return views.get(item);
}

/**
 * A tool call of an answer: a collapsed section under the answer's text, summary with the
 * tool's name, body with its arguments as they stream. Returns the parts later steps fill.
 */
function addToolCall(item, name) {
  let list = item.querySelector(".tool-calls");
  if (!list) {
    list = document.createElement("div");
    list.className = "tool-calls";
    item.querySelector(".content").after(list);
    item.classList.add("has-tools");
  }
  const section = document.createElement("details");
  section.className = "tool-call";
  const summary = document.createElement("summary");
  const label = document.createElement("span");
  label.className = "tool-label";
  label.textContent = "Tool call";
  const nameCode = document.createElement("code");
  nameCode.className = "tool-name";
  nameCode.textContent = name; // a name from the model: text, never HTML
  const status = document.createElement("span");
  status.className = "tool-status";
  status.textContent = "preparing";
  summary.append(label, " ", nameCode, " ", status);
  const argumentsBlock = document.createElement("pre");
  argumentsBlock.className = "tool-arguments";
  const argumentsText = document.createTextNode("");
  argumentsBlock.append(argumentsText);
  section.append(summary, heading("Arguments"), argumentsBlock);
  list.append(section);
  scrollToEnd();
  return { section, status, argumentsText };
}

function heading(text) {
  const title = document.createElement("p");
  title.className = "tool-heading";
  title.textContent = text;
  return title;
}

/** The whole call: its input pretty-printed, or its raw arguments and why they are not valid. */
function showToolInput(view, call) {
  if (call.input !== null) {
    view.argumentsText.data = JSON.stringify(call.input, null, 2);
    view.status.textContent = "ready";
    return;
  }
  view.argumentsText.data = call.arguments;
  const problem = document.createElement("p");
  problem.className = "tool-input-error";
  problem.textContent = `Input error: ${call.input_error}`;
  view.section.querySelector(".tool-arguments").after(problem);
  view.status.textContent = "invalid arguments";
}

/** The result sent back to the model, under the call's arguments. */
function showToolResult(view, { content, error }) {
  const result = document.createElement("pre");
  result.className = error ? "tool-result error" : "tool-result";
  result.textContent = content;
  view.section.append(heading(error ? "Error sent back" : "Result sent back"), result);
  view.status.textContent = error ? "error sent back" : "result sent back";
}

/** The calls of an answer that will not be run (it stopped, failed, or hit the bound). */
function markNotRun(calls) {
  for (const view of calls.values()) {
    if (!view.section.querySelector(".tool-result")) view.status.textContent = "not run";
  }
}

/** A call's arguments as chat-stream.js gives them to onToolCall (a saved chat has only
 * the text). */
function parsedCall(name, argumentsText) {
  let input = null;
  try {
    input = JSON.parse(argumentsText);
  } catch {
    // Not JSON: reported as invalid below.
  }
  const isObject = input !== null && typeof input === "object" && !Array.isArray(input);
  return isObject ? { name, arguments: argumentsText, input } : { name, arguments: argumentsText, input: null, input_error: "The arguments are not a JSON object." };
}

const thoughts = new WeakMap(); // assistant item -> {view, text} of its "Thinking" section

/** The reasoning of `item` grows by `piece`, in a collapsed "Thinking" section above the
 * answer's text, made at the first piece (one per answer, so a continuation's reasoning
 * goes on in the same section). */
function think(item, piece) {
  if (!thoughts.has(item)) thoughts.set(item, { view: addThinking(item), text: "" });
  const thought = thoughts.get(item);
  thought.text += piece;
  thought.view.show(thought.text);
}

function addThinking(item) {
  const section = document.createElement("details");
  section.className = "thinking";
  const summary = document.createElement("summary");
  summary.textContent = "Thinking";
  const body = document.createElement("div");
  body.className = "thinking-text";
  section.append(summary, body);
  item.querySelector(".content").before(section);
  return new MarkdownView(body);
}

/** Copy and Regenerate under a settled answer. */
function addAnswerActions(item) {
  item.querySelector(".answer-actions")?.remove();
  const actions = document.createElement("div");
  actions.className = "answer-actions";
  if (viewOf(item).text.trim()) actions.append(actionButton("Copy", "copy-answer", "Copy the answer as markdown"));
  actions.append(actionButton("Regenerate", "regenerate", "Answer this turn again (the turns after it are removed)"));
  item.append(actions);
}

function actionButton(label, className, title) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = `action ${className}`;
  button.textContent = label;
  button.title = title;
  return button;
}

function nearEnd() {
  return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 80;
}

function scrollToEnd(force = false) {
  if (force || nearEnd()) transcript.scrollTop = transcript.scrollHeight;
}

function setStreaming(streaming) {
  sendButton.disabled = streaming;
  stopButton.hidden = !streaming;
  stopButton.disabled = !streaming;
  messagesList.setAttribute("aria-busy", String(streaming));
  if (streaming) statusLine.textContent = "The assistant is answering.";
}

function clearRetries() {
  clearInterval(retryTimer);
  retryTimer = null;
  for (const button of messagesList.querySelectorAll("button.retry, button.continue")) button.remove();
}

/** A notice on an answer; `proceed` offers Continue, `retry` offers Retry. */
function showNotice(item, text, { quiet = false, requestId = null, retry = false, retryAfter = 0, proceed = false } = {}) {
  const notice = document.createElement("p");
  notice.className = quiet ? "notice quiet" : "notice";
  notice.setAttribute("role", quiet ? "status" : "alert");
  const message = document.createElement("span");
  message.className = "notice-text";
  message.textContent = text;
  notice.append(message);
  if (requestId) {
    const id = document.createElement("span");
    id.className = "request-id";
    id.textContent = `request ${requestId}`;
    notice.append(id);
  }
  if (proceed) notice.append(continueButton());
  if (retry) notice.append(retryButton(item, retryAfter));
  item.querySelector(".answer-actions") ? item.querySelector(".answer-actions").before(notice) : item.append(notice);
  // An error is announced (role=alert) and brought into view, wherever the reader was.
  if (!quiet) notice.scrollIntoView({ block: "nearest" });
  else scrollToEnd();
  return notice;
}

function continueButton() {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "continue";
  button.textContent = "Continue";
  button.title = "Ask the model to go on where the answer stops";
  return button;
}

function retryButton(item, waitSeconds) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "retry";
  button.textContent = "Retry";
  if (waitSeconds > 0) {
    // Honour Retry-After: the button wakes up when the server said it may be asked again.
    let left = waitSeconds;
    button.disabled = true;
    button.textContent = `Retry in ${left} s`;
    retryTimer = setInterval(() => {
      left -= 1;
      if (left > 0) {
        button.textContent = `Retry in ${left} s`;
        return;
      }
      clearInterval(retryTimer);
      retryTimer = null;
      button.disabled = false;
      button.textContent = "Retry";
    }, 1000);
  }
  return button;
}

/** Draws the open conversation from its entries (a reload, or a chat reopened); a turn
 * left without an answer (a reload before it began, a chat kept elsewhere) offers Retry,
 * unless `pending` says it is being answered. */
function drawChat({ pending = false } = {}) {
  messagesList.replaceChildren();
  emptyHint.hidden = chat.entries.length > 0;
  let turn = -1;
  const calls = new Map(); // tool call id -> its section, for the results that follow
  chat.entries.forEach((entry, index) => {
    if (entry.role === "tool") {
      const view = calls.get(entry.tool_call_id);
      if (view) showToolResult(view, { content: entry.content, error: entry.content.startsWith(ERROR_PREFIX) });
      return;
    }
    if (entry.role === "user") turn = index;
    const item = addMessage(entry.role, entry.content, turn, { scroll: false, images: entry.images });
    if (entry.role === "user") return;
    viewOf(item).flush();
    item.dataset.state = "settled";
    for (const call of entry.tool_calls ?? []) {
      const view = addToolCall(item, call.function.name);
      showToolInput(view, parsedCall(call.function.name, call.function.arguments));
      calls.set(call.id, view);
    }
    if (entry.incomplete) {
      item.dataset.outcome = entry.incomplete.kind;
      markNotRun(calls);
      const last = index === chat.entries.length - 1;
      const { notice, quiet, requestId } = entry.incomplete;
      showNotice(item, notice, { quiet, requestId, retry: last && entry.incomplete.retry, proceed: last && entry.incomplete.continue === true });
    }
    if (!entry.tool_calls) addAnswerActions(item);
  });
  if (!pending && ["user", "tool"].includes(chat.entries.at(-1)?.role)) {
    const item = addMessage("assistant", "", turn, { scroll: false });
    item.dataset.state = "settled";
    showNotice(item, "This turn has no answer.", { quiet: true, retry: true });
  }
  drawChatList();
  scrollToEnd(true);
}

// --- answering ----------------------------------------------------------------------------

async function send(text, attached = []) {
  const turn = chat.entries.length;
  const images = attached.map(({ image }) => image);
  for (const { image, dataUrl } of attached) heldImages.set(image.id, dataUrl);
  chat.entries.push({ role: "user", content: text, ...(images.length ? { images } : {}) });
  keep(chat);
  addMessage("user", text, turn, { images });
  drawChatList();
  await answer(addMessage("assistant", "", turn));
}

/** Answers the turn of `item` again: what followed its user message goes, on screen and
 * in the conversation (Retry and Regenerate). */
function regenerate(item) {
  if (active) return;
  const turn = Number(item.dataset.turn);
  if (chat.entries[turn]?.role !== "user") return;
  chat.entries.length = turn + 1;
  keep(chat);
  const userItem = messagesList.querySelector(`li.message.user[data-turn="${turn}"]`);
  while (userItem?.nextElementSibling) userItem.nextElementSibling.remove();
  answer(addMessage("assistant", "", turn));
}

/** Continue: asks the model to go on with the cut answer of `item`, the conversation's
 * last entry; its text grows in place and the two parts become one answer. With
 * `resume`, reads a continuation already being made (a reload). */
function continueAnswer(item, { resume = null, round = null } = {}) {
  if (active) return;
  const entry = chat.entries.at(-1);
  if (entry?.role !== "assistant" || entry.incomplete?.continue !== true || item !== messagesList.lastElementChild) return;
  for (const old of item.querySelectorAll(".notice, .answer-actions")) old.remove();
  delete item.dataset.outcome;
  // The automatic rounds since the user's message, counted from the conversation.
  const asked = chat.entries.findLastIndex((other) => other.role === "user");
  round ??= chat.entries.slice(asked + 1).filter((other) => other.tool_calls).length;
  answer(item, { resume, round, continued: entry });
}

/** Streams the answer to the conversation as it is into `item`; with `resume`, reads an
 * answer already being made instead of asking for a new one. `round` counts the automatic
 * requests with tool results since the user's message. With `continued` (the cut answer,
 * the conversation's last entry), the model is asked to go on with it, and what it writes
 * is appended. */
async function answer(item, { resume = null, round = 0, continued = null } = {}) {
  clearRetries();
  const owner = chat; // a new chat may be opened while this one streams
  const controller = new AbortController();
  active = { controller, chat: owner };
  setStreaming(true);
  const view = viewOf(item);
  const before = continued?.content ?? ""; // the text this answer goes on from
  const calls = new Map(); // a call's index (from the stream) -> its section's parts
  item.dataset.state = "waiting";
  const streaming = () => {
    if (item.dataset.state === "reconnecting") {
      item.querySelector(".notice.reconnecting")?.remove();
      statusLine.textContent = "The assistant is answering.";
    }
    item.dataset.state = "streaming";
  };
  const messages = requestMessages(owner.entries, held);
  letGo(owner.entries, messages);
  if (continued) messages.push({ role: "user", content: CONTINUE_PROMPT });

  const outcome = await streamChat(messages, {
    signal: controller.signal,
    headers: authHeaders(),
    // Thinking models spend reasoning from the answer's budget: "low" keeps the thinking
    // visible and short, so the answer fits (docs/models.md, "Reasoning").
    extra: { reasoning_effort: REASONING_EFFORT, tools: TOOL_DEFINITIONS },
    resumable: true,
    resume,
    onMeta: (meta) => {
      item.dataset.requestId = meta.request_id;
      modelLine.textContent = meta.model;
    },
    onStream: ({ streamId }) => {
      // A reload picks the answer up again; a continuation's, into the cut answer.
      if (item.dataset.streamId !== streamId) store.setPending(owner, { streamId, round, ...(continued ? { continued: true } : {}) });
      item.dataset.streamId = streamId;
    },
    onReconnecting: () => {
      item.dataset.state = "reconnecting";
      if (!item.querySelector(".notice.reconnecting")) {
        showNotice(item, "Connection lost. Reconnecting…", { quiet: true }).classList.add("reconnecting");
      }
      statusLine.textContent = "Reconnecting.";
    },
    onDelta: (piece, all) => {
      const follow = nearEnd();
      streaming();
      view.show(before + all);
      if (follow) scrollToEnd(true);
    },
    onReasoning: (piece) => think(item, piece),
    onToolCallStart: ({ index, name }) => {
      streaming();
      calls.set(index, addToolCall(item, name));
    },
    onToolCallDelta: ({ index, arguments: fragment }) => {
      calls.get(index)?.argumentsText.appendData(fragment); // text, as the answer
    },
    onToolCall: (call) => {
      if (!calls.has(call.index)) calls.set(call.index, addToolCall(item, call.name));
      showToolInput(calls.get(call.index), call);
    },
  });

  // Another answer may be active by now (this one was stopped by New chat or Chats).
  if (active?.controller === controller) active = null;
  const ended = { ...outcome, text: before + outcome.text, sent: messages };
  view.show(ended.text);
  view.flush();
  thoughts.get(item)?.view.flush();
  item.querySelector(".notice.reconnecting")?.remove();
  if (outcome.resumed) item.dataset.resumed = String(outcome.resumed);
  item.dataset.state = "settled";
  item.dataset.outcome = outcome.kind;
  const next = settle(owner, item, ended, calls, round, continued && { entry: continued, added: outcome.text });
  store.setPending(owner, null);
  if (!owner.cleared) keep(owner); // not after "Clear all chats"
  if (owner !== chat) return; // the user moved to another chat meanwhile
  drawChatList();
  if (next) {
    // The results go back at once, in a new answer: Send stays disabled meanwhile.
    return answer(next, { round: round + 1 });
  }
  setStreaming(false);
  if (document.activeElement === document.body || document.activeElement === stopButton) input.focus();
}

/** How an answer ended when it is not whole: {kind, notice, quiet, retry, retryAfter,
 * proceed} (proceed: Continue is offered), or null for a whole answer. `skipped` counts the
 * frames lost from all of its text; `continuing`: it was a continuation, which keeps
 * Continue when it fails, as the answer is still cut. */
function noticeOf(outcome, skipped, continuing) {
  const gaps = skipped > 0 ? gapsText(skipped) : "";
  const end = (kind, notice, { quiet = false, retry = true, retryAfter = 0, proceed = continuing && retry } = {}) => ({
    kind, notice: [notice, gaps].filter(Boolean).join(" "), quiet, retry, retryAfter, proceed,
  });
  switch (outcome.kind) {
    case "complete": {
      const cut = CUT_TEXT[outcome.cut];
      // A thinking model can spend the whole token budget before it answers.
      if (!outcome.text.trim()) return end("empty", cut?.empty ?? "The model returned an empty answer.", { proceed: false });
      if (cut) return end(outcome.cut, cut.text, { proceed: outcome.cut === "length" });
      return gaps ? end("gaps", "", { proceed: false }) : null;
    }
    case "cancelled":
      return end("cancelled", "Stopped.", { quiet: true });
    case "truncated":
      return end("truncated", "The answer was cut off: the connection ended before it was complete.");
    case "error": {
      // An `error` event: keep any partial text, marked incomplete.
      if (outcome.status === 200) return end("error", outcome.text ? `${outcome.message} The text above is incomplete.` : outcome.message);
      let text = BEFORE_STREAM_TEXT[outcome.code] || outcome.message;
      if ((outcome.code === "rate_limited" || outcome.code === "model_busy") && outcome.retryAfter) text += ` You can retry in ${outcome.retryAfter} s.`;
      return end("refused", text, { retry: !NOT_RETRYABLE.has(outcome.code), retryAfter: outcome.retryAfter || 0 });
    }
    default:
      throw new Error(`unknown outcome ${outcome.kind}`);
  }
}

/** Ends an answer on screen and in its conversation. Returns the item of the next answer
 * when the model's tool calls ran and their results must be sent, else null. With
 * `continuation` ({entry, added}), the answer went on from the cut `entry`, and `outcome`'s
 * text is the two parts joined. */
function settle(owner, item, outcome, calls, round, continuation) {
  const requestId = outcome.requestId;
  const skippedBefore = continuation?.entry.incomplete.skipped;
  const skipped = (Number.isSafeInteger(skippedBefore) && skippedBefore > 0 ? skippedBefore : 0) + (outcome.skipped ?? 0);
  // The joined answer takes the cut one's place; a continuation that brought nothing and
  // did not end leaves the cut answer as it was (this attempt's notice is only shown).
  const unchanged = continuation && !continuation.added && outcome.kind !== "complete";
  const cutAt = continuation ? owner.entries.lastIndexOf(continuation.entry) : -1;
  if (!unchanged && cutAt >= 0) owner.entries.splice(cutAt, 1);
  const askedForTools = outcome.kind === "complete" && outcome.cut === null && skipped === 0
    && outcome.done?.finish_reason === "tool_calls" && outcome.toolCalls.length > 0;
  if (askedForTools) return runTools(owner, item, outcome, calls, round);
  markNotRun(calls); // a stopped, failed, cut or gapped answer never runs its calls
  if (outcome.kind === "error" && outcome.status !== 200 && settleRefusal(owner, item, outcome)) {
    addAnswerActions(item);
    return null;
  }
  const end = noticeOf(outcome, skipped, Boolean(continuation));
  if (end === null) {
    // A whole answer joins the conversation as it came.
    owner.entries.push({ role: "assistant", content: outcome.text });
    statusLine.textContent = "The answer is complete.";
  } else {
    // Any other is kept with its notice (the saved chat shows it again after a reload).
    const { kind, notice, quiet, retry, retryAfter, proceed } = end;
    const shownId = quiet ? null : requestId;
    if (!unchanged) {
      owner.entries.push({ role: "assistant", content: outcome.text, incomplete: {
        kind, notice, quiet, retry, requestId: shownId, ...(proceed ? { continue: true } : {}), ...(skipped ? { skipped } : {}),
      } });
    }
    showNotice(item, notice, { quiet, retry, requestId: shownId, retryAfter, proceed });
    statusLine.textContent = notice;
    if (outcome.code === "unauthorized") {
      settings.open = true;
      tokenInput.focus();
    }
  }
  addAnswerActions(item);
  return null;
}

/** Runs the calls of a complete answer that asked for them, shows each result in its
 * call's section, and adds the answer and the results to the conversation. Returns the
 * item of the answer to come, or null past MAX_TOOL_ROUNDS. */
function runTools(owner, item, outcome, calls, round) {
  if (round >= MAX_TOOL_ROUNDS) {
    markNotRun(calls);
    const message = `The model asked for tools again after ${MAX_TOOL_ROUNDS} rounds of tool results; the page stopped there.`;
    owner.entries.push({ role: "assistant", content: outcome.text, incomplete: { kind: "tool_rounds", notice: message, retry: false, requestId: outcome.requestId } });
    showNotice(item, message, { requestId: outcome.requestId });
    statusLine.textContent = message;
    addAnswerActions(item);
    return null;
  }
  const results = outcome.toolCalls.map((call) => {
    const result = runToolCall(call);
    showToolResult(calls.get(call.index), result);
    return { role: "tool", tool_call_id: call.id, content: result.content };
  });
  owner.entries.push({
    role: "assistant",
    content: outcome.text,
    tool_calls: outcome.toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } })),
  }, ...results);
  return owner === chat ? addMessage("assistant", "", item.dataset.turn) : null;
}

/** A turn the Worker refused as it is (too long, invalid): it leaves the conversation and
 * goes back into the composer, its text and its images. Returns false for any other
 * refusal. */
function settleRefusal(owner, item, outcome) {
  const turn = Number(item.dataset.turn);
  const entry = owner.entries[turn];
  if (!REFUSED_TURN.has(outcome.code) || !entry || owner.entries.length !== turn + 1) return false;
  showNotice(item, refusalText(outcome), { requestId: outcome.requestId });
  statusLine.textContent = "The message was not sent.";
  owner.entries.pop();
  messagesList.querySelector(`li.message.user[data-turn="${turn}"]`)?.classList.add("refused");
  if (!input.value) {
    input.value = entry.content;
    fitInput();
  }
  const images = (entry.images ?? []).filter((image) => heldImages.has(image.id));
  attachments.restore(images.map((image) => ({ image, dataUrl: heldImages.get(image.id) })));
  return true;
}

/** Why the Worker refused a turn. A refusal of an image names its part
 * ("messages[0].content[1]: <model> does not take images."): the notice names the image
 * instead, as the user knows it. */
function refusalText(outcome) {
  const named = /^messages\[(\d+)\]\.content\[(\d+)\]: ([\s\S]+)$/.exec(outcome.message ?? "");
  const image = named && imageOfPart.get(outcome.sent?.[Number(named[1])]?.content?.[Number(named[2])]);
  if (image) return `The image “${image.name}” was not accepted: ${named[3]}`;
  return BEFORE_STREAM_TEXT[outcome.code] || outcome.message;
}

/** Lets go of the bytes of `entries`' images that `messages` sends as placeholders: past
 * the bounds now, they never fit again (newer images only come after them). */
function letGo(entries, messages) {
  const sent = new Set(messages.flatMap((message) => (Array.isArray(message.content) ? message.content : []))
    .map((part) => imageOfPart.get(part)?.id).filter(Boolean));
  for (const entry of entries) {
    for (const image of entry.images ?? []) if (!sent.has(image.id)) heldImages.delete(image.id);
  }
}

// --- conversations ------------------------------------------------------------------------

/** Saves `owner`, and says so once in the page when it cannot be kept. When another tab
 * saved the same chat meanwhile, that tab's copy stays where it is and this tab's turns
 * become a chat of their own: neither is lost, and this tab says which is which. */
function keep(owner) {
  let result = store.save(owner);
  if (result === "conflict") {
    owner.id = store.fork(owner).id;
    result = store.save(owner);
    if (owner === chat) {
      store.setOpen(chat);
      showStorageNotice("This chat was also continued in another tab. Its turns there are kept as they were; "
        + "this tab's are kept as a new chat in the list.");
    }
  }
  if (result !== "kept" && owner === chat && !owner.unkeptNoticeShown) {
    owner.unkeptNoticeShown = true;
    showStorageNotice(result === "too_large"
      ? "This chat is too large to keep in this browser. It stays on screen until you leave or reload the page."
      : "This browser's storage is full, so this chat is not kept. It stays on screen until you leave or reload the page.");
  }
  return result;
}

function showStorageNotice(text) {
  storageNotice.textContent = text;
  storageNotice.hidden = false;
}

// Another tab saved the chat open here: while this tab is not answering, and has nothing
// the other does not, it shows that tab's turns too. Otherwise its next save keeps its own
// turns apart (keep).
window.addEventListener("storage", (event) => {
  if (event.key !== store.keyOf(chat) || active || event.newValue === null) return;
  const theirs = store.load(chat.id, { adopt: false });
  if (!theirs || theirs.entries.length <= chat.entries.length) return;
  const ours = JSON.stringify(chat.entries);
  if (JSON.stringify(theirs.entries.slice(0, chat.entries.length)) !== ours) return;
  chat = store.load(chat.id);
  drawChat();
  drawChatList();
  statusLine.textContent = "This chat was continued in another tab; its new turns are shown.";
});

function openChat(next) {
  active?.controller.abort(); // its answer settles into its own chat
  active = null;
  setStreaming(false);
  clearRetries();
  storageNotice.hidden = true;
  chat = next;
  store.setOpen(chat);
  drawChat();
  chatsMenu.open = false;
  input.focus();
}

function drawChatList() {
  const items = store.list().map(({ id, title, updated }) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "chat-link";
    button.dataset.chatId = id;
    if (id === chat.id) button.setAttribute("aria-current", "true");
    const name = document.createElement("span");
    name.className = "chat-title";
    name.textContent = title; // the user's own words: text
    const when = document.createElement("span");
    when.className = "chat-when";
    when.textContent = new Date(updated).toLocaleString([], { dateStyle: "short", timeStyle: "short" });
    button.append(name, when);
    item.append(button);
    return item;
  });
  chatList.replaceChildren(...items);
  $("no-chats").hidden = items.length > 0;
}

$("new-chat").addEventListener("click", () => openChat(store.create()));
chatList.addEventListener("click", (event) => {
  const button = event.target.closest("button.chat-link");
  const next = button && store.load(button.dataset.chatId);
  if (next) openChat(next);
});
$("clear-chats").addEventListener("click", () => {
  if (active) active.chat.cleared = true;
  store.clear();
  heldImages.clear();
  openChat(store.create());
});

// --- copy, retry, regenerate: one listener for every answer --------------------------------

async function copy(button, text) {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
    statusLine.textContent = "Copied to the clipboard.";
  } catch {
    button.textContent = "Copy failed";
    statusLine.textContent = "The browser did not allow copying.";
  }
  setTimeout(() => { button.textContent = label; }, 1500);
}

messagesList.addEventListener("click", (event) => {
  const button = event.target.closest("button");
  const item = button?.closest("li.message");
  if (!item) return;
  if (button.classList.contains("copy-code")) copy(button, button.closest(".code-block").querySelector("code").textContent);
  else if (button.classList.contains("copy-answer")) copy(button, viewOf(item).text);
  else if (button.classList.contains("retry") || button.classList.contains("regenerate")) regenerate(item);
  else if (button.classList.contains("continue")) continueAnswer(item);
});

// --- the composer and the menus --------------------------------------------------------------

let submitting = false; // waiting for attached files to be read
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  if (active || submitting) return; // one answer at a time
  submitting = true;
  try {
    await attachments.ready(); // a file still being read goes with this turn
  } finally {
    submitting = false;
  }
  if (active) return;
  const text = input.value;
  if (!text.trim() && !attachments.count) {
    input.focus();
    return;
  }
  input.value = "";
  fitInput();
  send(text, attachments.take());
});

input.addEventListener("keydown", (event) => {
  // Enter sends, Shift+Enter adds a newline; Enter that confirms an IME composition does neither.
  if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
  event.preventDefault();
  if (!active) form.requestSubmit();
});

function fitInput() {
  input.style.height = "auto";
  input.style.height = `${input.scrollHeight + 2}px`;
}
input.addEventListener("input", fitInput);

// Stop stops the answer on the server too (chat-stream.js sends DELETE).
stopButton.addEventListener("click", () => active?.controller.abort());

// Settings and Chats close as dialogs do: on Escape (focus back on their summary, where it
// was) or on a click outside them.
const menus = [settings, chatsMenu];
document.addEventListener("keydown", (event) => {
  const open = menus.find((menu) => menu.open);
  if (event.key !== "Escape" || !open) return;
  open.open = false;
  open.querySelector("summary").focus();
});
document.addEventListener("click", (event) => {
  for (const menu of menus) if (menu.open && !menu.contains(event.target)) menu.open = false;
});

// The model is named before the first answer: the Worker's own list has MODEL first.
async function showModel() {
  try {
    const response = await fetch("/v1/models", { headers: authHeaders() });
    const first = response.ok ? (await response.json())?.data?.[0]?.id : null;
    if (typeof first === "string" && !modelLine.textContent) modelLine.textContent = first;
  } catch {
    // Offline, or a token is needed first: the first answer's `meta` names it.
  }
}

/** After a reload: this tab's open chat again, and the answer it was waiting for read from
 * its start. Leaving the page does not stop an answer; one nobody comes back for is stopped
 * by the Worker after RESUME_GRACE_MS (60 s by default). */
function restore() {
  const { chat: opened, pending } = store.opened();
  if (!opened) {
    store.setOpen(chat);
    drawChatList();
    return;
  }
  chat = opened;
  const last = chat.entries.at(-1);
  // A continuation goes on into the cut answer it continues, still the last entry.
  const continuing = pending?.continued === true && last?.role === "assistant" && last.incomplete?.continue === true;
  const waiting = pending !== null && (continuing || ["user", "tool"].includes(last?.role));
  drawChat({ pending: waiting });
  if (!waiting) return;
  const resume = { streamId: pending.streamId, lastEventId: "0" };
  const round = Math.min(Math.max(pending.round, 0), MAX_TOOL_ROUNDS);
  if (continuing) {
    continueAnswer(messagesList.lastElementChild, { resume, round });
    return;
  }
  let turn = chat.entries.length - 1;
  while (turn > 0 && chat.entries[turn].role !== "user") turn--;
  answer(addMessage("assistant", "", turn), { resume, round });
}

restore();
showModel();
input.focus();
