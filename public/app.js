// The chat page: keeps the conversation in the page, streams each answer with
// chat-stream.js, and renders model text as text (text nodes only, never HTML).
import { streamChat } from "./chat-stream.js";

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
const settings = $("settings");
const tokenInput = $("token");

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

// The settled turns sent as context with each request. Only complete answers are added:
// a stopped, failed or cut-off answer stays on screen but is not sent back to the model.
const conversation = [];
// Answers are resumable (docs/protocol.md): a dropped connection reconnects where it left
// off, and a reload picks up an answer still being written. The conversation and the
// answer in progress are kept in sessionStorage (this tab only) for that.
const SAVED = "chat-page-v1";
const turnOf = new WeakMap(); // assistant message element -> {turn, userItem} it answers
let active = null; // {controller} while an answer streams
let retryTimer = null; // the countdown of a rate-limited Retry

// Codes with their own wording; any other code shows the server's (generic) message.
const BEFORE_STREAM_TEXT = {
  payload_too_large: "Your message is too long. Shorten it and send it again.",
  rate_limited: "Too many requests right now.",
  unauthorized: "This server needs a valid access token: enter it under Settings, then retry.",
  origin_not_allowed: "This page is not allowed to use the chat API.",
  model_unavailable: "The model is not available right now.",
  upstream_timeout: "The model did not start answering in time.",
  network_error: "Could not reach the server. Check your connection.",
};
// Retrying cannot help these: the same request would be refused the same way.
const NOT_RETRYABLE = new Set(["payload_too_large", "invalid_request", "invalid_json", "unsupported_media_type", "origin_not_allowed"]);
// These mean the model never saw the turn, so it leaves the conversation and goes back
// into the input box to be edited.
const REFUSED_TURN = new Set(["payload_too_large", "invalid_request"]);

function addMessage(role, text) {
  emptyHint.hidden = true;
  const item = document.createElement("li");
  item.className = `message ${role}`;
  const author = document.createElement("span");
  author.className = "author";
  author.textContent = role === "user" ? "You" : "Assistant";
  const content = document.createElement("p");
  content.className = "content";
  content.textContent = text; // text, never HTML
  item.append(author, content);
  messagesList.append(item);
  scrollToEnd(true);
  return item;
}

/** A collapsed "Thinking" section above the answer's text; returns its text node. */
function addThinking(item) {
  const section = document.createElement("details");
  section.className = "thinking";
  const summary = document.createElement("summary");
  summary.textContent = "Thinking";
  const body = document.createElement("p");
  body.className = "thinking-text";
  const text = document.createTextNode("");
  body.append(text);
  section.append(summary, body);
  item.querySelector(".content").before(section);
  return text;
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
  for (const button of messagesList.querySelectorAll("button.retry")) button.remove();
}

function showNotice(item, text, { quiet = false, requestId = null, retry = false, retryAfter = 0 } = {}) {
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
  if (retry) notice.append(retryButton(item, retryAfter));
  item.append(notice);
  scrollToEnd();
  return notice;
}

function retryButton(item, waitSeconds) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "retry";
  button.textContent = "Retry";
  button.addEventListener("click", () => {
    if (active) return;
    item.querySelector(".notice")?.remove();
    answer(item);
  });
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

async function send(text) {
  const turn = { role: "user", content: text };
  conversation.push(turn);
  save();
  const userItem = addMessage("user", text);
  const assistantItem = addMessage("assistant", "");
  turnOf.set(assistantItem, { turn, userItem });
  await answer(assistantItem);
}

function save(pending = null) {
  try {
    sessionStorage.setItem(SAVED, JSON.stringify({ conversation, pending }));
  } catch {
    // Storage full or disabled: the page works on, it only cannot resume after a reload.
  }
}

/** After a reload: the saved turns again, and the answer in progress read from its start. */
function restore() {
  let saved;
  try {
    saved = JSON.parse(sessionStorage.getItem(SAVED) || "null");
  } catch {
    saved = null;
  }
  if (!saved || !Array.isArray(saved.conversation)) return;
  for (const turn of saved.conversation) {
    if (typeof turn?.content !== "string" || !["user", "assistant"].includes(turn.role)) return;
  }
  conversation.push(...saved.conversation);
  let lastUser = null;
  for (const turn of conversation) {
    const item = addMessage(turn.role, turn.content);
    if (turn.role === "user") lastUser = { turn, item };
  }
  const pending = saved.pending;
  if (pending && typeof pending.streamId === "string" && lastUser && conversation.at(-1) === lastUser.turn) {
    const assistantItem = addMessage("assistant", "");
    turnOf.set(assistantItem, { turn: lastUser.turn, userItem: lastUser.item });
    answer(assistantItem, { streamId: pending.streamId, lastEventId: "0" });
  }
}

/** Streams the answer to the conversation as it is into `item` (also used by Retry);
 * with `resume`, reads an answer already being made instead of asking for a new one. */
async function answer(item, resume = null) {
  clearRetries();
  const controller = new AbortController();
  active = { controller };
  setStreaming(true);
  const content = item.querySelector(".content");
  const text = document.createTextNode("");
  content.replaceChildren(text);
  item.querySelector(".thinking")?.remove(); // a retry thinks again
  let thinking = null; // the text node of this answer's "thinking" section, once it has one
  item.dataset.state = "waiting";
  delete item.dataset.outcome;

  const outcome = await streamChat(conversation.slice(), {
    signal: controller.signal,
    headers: authHeaders(),
    // Thinking models spend reasoning from the answer's budget: "low" keeps the thinking
    // visible and short, so the answer fits (README, "Reasoning").
    extra: { reasoning_effort: REASONING_EFFORT },
    resumable: true,
    resume,
    onMeta: (meta) => {
      item.dataset.requestId = meta.request_id;
      modelLine.textContent = meta.model;
    },
    onStream: ({ streamId }) => {
      if (item.dataset.streamId !== streamId) save({ streamId });
      item.dataset.streamId = streamId;
    },
    onReconnecting: () => {
      item.dataset.state = "reconnecting";
      if (!item.querySelector(".notice.reconnecting")) {
        showNotice(item, "Connection lost. Reconnecting…", { quiet: true }).classList.add("reconnecting");
      }
      statusLine.textContent = "Reconnecting.";
    },
    onDelta: (piece) => {
      const follow = nearEnd();
      if (item.dataset.state === "reconnecting") {
        item.querySelector(".notice.reconnecting")?.remove();
        statusLine.textContent = "The assistant is answering.";
      }
      item.dataset.state = "streaming";
      text.appendData(piece); // a text node: markup in model output stays text
      if (follow) scrollToEnd(true);
    },
    onReasoning: (piece) => {
      thinking ??= addThinking(item);
      thinking.appendData(piece); // text, never HTML, as the answer
    },
  });

  active = null;
  item.querySelector(".notice.reconnecting")?.remove();
  if (outcome.resumed) item.dataset.resumed = String(outcome.resumed);
  item.dataset.state = "settled";
  item.dataset.outcome = outcome.kind;
  setStreaming(false);
  settle(item, outcome);
  save();
  if (document.activeElement === document.body || document.activeElement === stopButton) input.focus();
}

function settle(item, outcome) {
  const requestId = outcome.requestId;
  switch (outcome.kind) {
    case "complete":
      if (outcome.text.trim()) {
        conversation.push({ role: "assistant", content: outcome.text });
        statusLine.textContent = "The answer is complete.";
      } else {
        // A thinking model can spend the whole token budget before it answers.
        const message = outcome.done?.finish_reason === "length"
          ? "The model used its whole token budget before it answered."
          : "The model returned an empty answer.";
        showNotice(item, message, { retry: true, requestId });
        statusLine.textContent = message;
      }
      return;
    case "cancelled":
      showNotice(item, "Stopped.", { quiet: true, retry: true });
      statusLine.textContent = "Stopped.";
      return;
    case "truncated":
      showNotice(item, "The answer was cut off: the connection ended before it was complete.", { retry: true, requestId });
      statusLine.textContent = "The answer was cut off.";
      return;
    case "error":
      if (outcome.status === 200) {
        // An `error` event: keep any partial text, marked incomplete.
        const partial = outcome.text ? " The text above is incomplete." : "";
        showNotice(item, `The answer failed: ${outcome.message}${partial}`, { retry: true, requestId });
      } else {
        settleRefusal(item, outcome);
      }
      statusLine.textContent = "The answer failed.";
      return;
    default:
      throw new Error(`unknown outcome ${outcome.kind}`);
  }
}

/** A non-200 answer: the Worker refused or could not start the turn. */
function settleRefusal(item, outcome) {
  let text = BEFORE_STREAM_TEXT[outcome.code] || outcome.message;
  if (outcome.code === "rate_limited" && outcome.retryAfter) text += ` You can retry in ${outcome.retryAfter} s.`;
  const retry = !NOT_RETRYABLE.has(outcome.code);
  showNotice(item, text, { retry, requestId: outcome.requestId, retryAfter: outcome.retryAfter || 0 });
  if (outcome.code === "unauthorized") {
    settings.open = true;
    tokenInput.focus();
  }
  const { turn, userItem } = turnOf.get(item) ?? {};
  if (REFUSED_TURN.has(outcome.code) && turn && conversation.at(-1) === turn) {
    conversation.pop();
    userItem.classList.add("refused");
    if (!input.value) {
      input.value = turn.content;
      fitInput();
    }
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  if (active) return; // one answer at a time
  const text = input.value;
  if (!text.trim()) {
    input.focus();
    return;
  }
  input.value = "";
  fitInput();
  send(text);
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

// Leaving the page does not stop the answer: a reload picks it up. One nobody comes back
// for is stopped by the Worker after RESUME_GRACE_MS (60 s by default).
restore();
input.focus();
