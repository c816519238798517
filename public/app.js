// The chat page: keeps the conversation in the page, streams each answer with
// chat-stream.js, and renders model text as text (text nodes only, never HTML). It offers
// the model the built-in tools of tools.js and runs the calls the model makes.
import { streamChat } from "./chat-stream.js";
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

// The settled turns sent as context with each request, exactly as they are sent. Only
// complete answers are added: a stopped, failed or cut-off answer stays on screen but is
// not sent back to the model. An answer that calls tools adds itself with its calls
// ({role: "assistant", content, tool_calls}) and one {role: "tool"} message per result.
const conversation = [];
// Answers that call tools are answered again automatically with the results, at most this
// many times after one user message, so that a model that keeps calling tools cannot keep
// the page busy for ever.
const MAX_TOOL_ROUNDS = 5;
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
function markNotRun(views) {
  for (const view of views.values()) {
    if (!view.section.querySelector(".tool-result")) view.status.textContent = "not run";
  }
}

/** A call's arguments as chat-stream.js gives them to onToolCall (a restored history has
 * only the text). */
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
  if (!saved || !Array.isArray(saved.conversation) || !saved.conversation.every(isTurn)) return;
  conversation.push(...saved.conversation);
  let lastUser = null;
  const calls = new Map(); // tool call id -> its section, for the results that follow
  for (const turn of conversation) {
    if (turn.role === "tool") {
      const view = calls.get(turn.tool_call_id);
      if (view) showToolResult(view, { content: turn.content, error: turn.content.startsWith(ERROR_PREFIX) });
      continue;
    }
    const item = addMessage(turn.role, turn.content);
    if (turn.role === "user") lastUser = { turn, item };
    for (const call of turn.tool_calls ?? []) {
      const view = addToolCall(item, call.function.name);
      showToolInput(view, parsedCall(call.function.name, call.function.arguments));
      calls.set(call.id, view);
    }
  }
  // An answer was being written: to the user's turn, or to the results of tool calls.
  const pending = saved.pending;
  if (pending && typeof pending.streamId === "string" && lastUser && ["user", "tool"].includes(conversation.at(-1).role)) {
    const assistantItem = addMessage("assistant", "");
    turnOf.set(assistantItem, { turn: lastUser.turn, userItem: lastUser.item });
    const round = Number.isSafeInteger(pending.round) ? pending.round : 0;
    answer(assistantItem, { resume: { streamId: pending.streamId, lastEventId: "0" }, round });
  }
}

/** A turn as this page saves it: what it sends, nothing else. */
function isTurn(turn) {
  const isText = (value) => typeof value === "string";
  switch (turn?.role) {
    case "user":
      return isText(turn.content);
    case "assistant":
      return isText(turn.content) && (turn.tool_calls === undefined || (Array.isArray(turn.tool_calls) && turn.tool_calls.every(
        (call) => isText(call?.id) && isText(call.function?.name) && isText(call.function.arguments))));
    case "tool":
      return isText(turn.tool_call_id) && isText(turn.content);
    default:
      return false;
  }
}

/** Streams the answer to the conversation as it is into `item` (also used by Retry);
 * with `resume`, reads an answer already being made instead of asking for a new one.
 * `round` counts the automatic requests with tool results since the user's message. */
async function answer(item, { resume = null, round = Number(item.dataset.round ?? 0) } = {}) {
  clearRetries();
  const controller = new AbortController();
  active = { controller };
  setStreaming(true);
  const content = item.querySelector(".content");
  const text = document.createTextNode("");
  content.replaceChildren(text);
  item.querySelector(".thinking")?.remove(); // a retry thinks again
  item.querySelector(".tool-calls")?.remove(); // and calls again
  item.classList.remove("has-tools");
  let thinking = null; // the text node of this answer's "thinking" section, once it has one
  const calls = new Map(); // a call's index (from the stream) -> its section's parts
  item.dataset.state = "waiting";
  item.dataset.round = String(round);
  delete item.dataset.outcome;
  const streaming = () => {
    if (item.dataset.state === "reconnecting") {
      item.querySelector(".notice.reconnecting")?.remove();
      statusLine.textContent = "The assistant is answering.";
    }
    item.dataset.state = "streaming";
  };

  const outcome = await streamChat(conversation.slice(), {
    signal: controller.signal,
    headers: authHeaders(),
    // Thinking models spend reasoning from the answer's budget: "low" keeps the thinking
    // visible and short, so the answer fits (README, "Reasoning").
    extra: { reasoning_effort: REASONING_EFFORT, tools: TOOL_DEFINITIONS },
    resumable: true,
    resume,
    onMeta: (meta) => {
      item.dataset.requestId = meta.request_id;
      modelLine.textContent = meta.model;
    },
    onStream: ({ streamId }) => {
      if (item.dataset.streamId !== streamId) save({ streamId, round });
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
      streaming();
      text.appendData(piece); // a text node: markup in model output stays text
      if (follow) scrollToEnd(true);
    },
    onReasoning: (piece) => {
      thinking ??= addThinking(item);
      thinking.appendData(piece); // text, never HTML, as the answer
    },
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

  active = null;
  item.querySelector(".notice.reconnecting")?.remove();
  if (outcome.resumed) item.dataset.resumed = String(outcome.resumed);
  item.dataset.state = "settled";
  item.dataset.outcome = outcome.kind;
  const next = settle(item, outcome, calls, round);
  save();
  if (next) {
    // The results go back at once, in a new answer: Send stays disabled meanwhile.
    turnOf.set(next, turnOf.get(item));
    return answer(next, { round: round + 1 });
  }
  setStreaming(false);
  if (document.activeElement === document.body || document.activeElement === stopButton) input.focus();
}

/** Ends an answer on screen and in the conversation. Returns the item of the next answer
 * when the model's tool calls ran and their results must be sent, else null. */
function settle(item, outcome, calls, round) {
  const requestId = outcome.requestId;
  const askedForTools = outcome.kind === "complete" && outcome.done?.finish_reason === "tool_calls" && outcome.toolCalls.length > 0;
  if (askedForTools) return runTools(item, outcome, calls, round);
  markNotRun(calls); // a stopped or failed answer never runs its calls
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
  return null;
}

/** Runs the calls of a complete answer that asked for them, shows each result in its
 * call's section, and adds the answer and the results to the conversation. Returns the
 * item of the answer to come, or null past MAX_TOOL_ROUNDS. */
function runTools(item, outcome, calls, round) {
  if (round >= MAX_TOOL_ROUNDS) {
    markNotRun(calls);
    const message = `The model asked for tools again after ${MAX_TOOL_ROUNDS} rounds of tool results; the page stopped there.`;
    showNotice(item, message, { requestId: outcome.requestId });
    statusLine.textContent = message;
    return null;
  }
  const results = outcome.toolCalls.map((call) => {
    const result = runToolCall(call);
    showToolResult(calls.get(call.index), result);
    return { role: "tool", tool_call_id: call.id, content: result.content };
  });
  conversation.push({
    role: "assistant",
    content: outcome.text,
    tool_calls: outcome.toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } })),
  }, ...results);
  return addMessage("assistant", "");
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

// Settings closes as a dialog does: on Escape (focus back on its summary, where it was)
// or on a click outside it.
const settingsSummary = settings.querySelector("summary");
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || !settings.open) return;
  settings.open = false;
  settingsSummary.focus();
});
document.addEventListener("click", (event) => {
  if (settings.open && !settings.contains(event.target)) settings.open = false;
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

// Leaving the page does not stop the answer: a reload picks it up. One nobody comes back
// for is stopped by the Worker after RESUME_GRACE_MS (60 s by default).
restore();
showModel();
input.focus();
