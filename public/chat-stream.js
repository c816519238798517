// Reads one chat turn from the Worker's /api/chat stream (docs/protocol.md), for any
// frontend: `import { streamChat } from "/chat-stream.js"`. No dependencies, no build.
//
//   const outcome = await streamChat(messages, {
//     signal: controller.signal,            // abort = stop generation upstream
//     onMeta: (meta) => {},                 // {request_id, model}
//     onDelta: (text, all) => {},           // each piece of answer text, and the text so far
//     onReasoning: (text) => {},
//     onToolCallStart: (start) => {},        // {index, id, name}: a tool call begins
//     onToolCallDelta: (delta) => {},        // {index, arguments}: a fragment of its arguments
//     onToolCall: (call) => {},              // {index, id, name, arguments, input} when whole,
//                                            // or input null and input_error (not a JSON object)
//     onPing: () => {},
//   });
//
// `streamChat` never rejects for anything the network or the server does; it resolves to
// one outcome:
//   {kind: "complete",  text, chunks, requestId, model, done,
//                       cut, skipped}                               a `done` event arrived
//   {kind: "error",     text, chunks, requestId, code, message,
//                       status, retryAfter}                         an `error` event, or a
//                                                                   non-200 JSON error
//   {kind: "truncated", text, chunks, requestId}                    the body ended (or broke)
//                                                                   with no terminal event
//   {kind: "cancelled", text, chunks, requestId}                    the signal aborted it
// Every outcome also has `streamId` (null unless resumable), `resumed` (reconnections) and
// `toolCalls`, the calls that arrived whole (as onToolCall had them). A complete answer
// that asks for them to be run has `done.finish_reason === "tool_calls"`; only then are
// they meant to be run (a stopped or cut-off answer's calls may be incomplete).
//
// A `done` ends the stream, not always the answer. `cut` is null when the model ended the
// answer itself (`finish_reason` "stop", "tool_calls", "function_call", or null: it did
// not say); else why the answer may not be whole: "length" (the token budget ran out),
// "content_filter" (the provider's filter stopped it) or "other" (a reason the Worker does
// not know, or one this module does not). `skipped` counts the upstream frames the Worker
// could not read (`done.skipped`, 0 when absent): more than 0, the text may have gaps. An
// answer is whole only when `cut` is null and `skipped` is 0.
//
// Resumable answers (docs/protocol.md, "Resumable answers"): with `resumable: true` the
// answer is made on the server whoever reads it. When the connection drops, streamChat
// reconnects with Last-Event-ID (up to `reconnectDelays.length` times in a row, calling
// `onReconnecting(attempt)` before each) and goes on where it left off; only when that
// fails is the outcome "truncated". Aborting the signal stops the answer on the server
// (DELETE, sent while the connection is still open, so that the stop reaches the model
// and the stream ends with its own `stopped` event; text after the abort is not passed
// on, and the outcome is "cancelled"). `onStream({streamId, lastEventId})` reports where the answer stands after each
// event, so a page can pick it up after a reload with `resume: {streamId, lastEventId}`
// (no POST: the answer is read from after lastEventId, "0" for the start).
// `status` is the HTTP status (200 for an `error` event); `retryAfter` is the seconds a 429
// asks to wait, or null. Codes made up by this module, not the server: `network_error`
// (no response), `http_error` (a non-200 without our JSON body), `unexpected_response`
// (a 200 that is not an event stream), `malformed_stream` (a frame that is not JSON, or
// a line over `maxLineLength`).

const DEFAULT_MAX_LINE = 1024 * 1024; // the Worker's own cap per upstream line
// docs/protocol.md, `done.finish_reason`: the reasons with which the model ended the
// answer itself, and those that cut it short.
const ENDED_BY_MODEL = new Set(["stop", "tool_calls", "function_call", null]);
const CUT_SHORT = new Set(["length", "content_filter"]);
const STOP_WAIT_MS = 3000; // how long a stopped resumable answer may take to end by itself

/** A line splitter for the event-stream format: CR, LF and CRLF all end a line. */
class LineSplitter {
  constructor(maxLineLength) {
    this.maxLineLength = maxLineLength;
    this.fragments = []; // pieces of the unfinished line, joined once it ends
    this.fragmentsLength = 0;
    this.skipLeadingLF = false; // the last chunk ended in CR: a LF next is the same line end
  }

  /** Returns the complete lines in `text`; throws MalformedStream for an overlong line. */
  feed(text) {
    const lines = [];
    let start = 0;
    if (this.skipLeadingLF && text.length > 0) {
      if (text.charCodeAt(0) === 10) start = 1;
      this.skipLeadingLF = false;
    }
    for (let i = start; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code !== 10 && code !== 13) continue;
      this.fragments.push(text.slice(start, i));
      lines.push(this.fragments.join(""));
      this.fragments = [];
      this.fragmentsLength = 0;
      if (code === 13) {
        if (i + 1 === text.length) this.skipLeadingLF = true;
        else if (text.charCodeAt(i + 1) === 10) i += 1;
      }
      start = i + 1;
    }
    if (start < text.length) {
      this.fragments.push(text.slice(start));
      this.fragmentsLength += text.length - start;
      if (this.fragmentsLength > this.maxLineLength) throw new MalformedStream("line too long");
    }
    return lines;
  }
}

class MalformedStream extends Error {}

/** Turns event-stream lines into {type, data} events and comments (WHATWG rules). */
class EventAssembler {
  constructor(lastEventId = "") {
    this.type = "";
    this.data = [];
    this.id = null; // the `id` field of the event being read
    this.lastEventId = lastEventId; // the id of the last complete event
  }

  /** Returns an event when `line` completes one, a {comment} for a comment line, or null. */
  line(line) {
    if (line === "") {
      const event = this.data.length ? { type: this.type || "message", data: this.data.join("\n") } : null;
      if (event && this.id !== null) this.lastEventId = this.id; // counts once its event is whole
      this.type = "";
      this.data = [];
      this.id = null;
      return event;
    }
    if (line.charCodeAt(0) === 58 /* ":" */) return { comment: line.slice(1).trim() };
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === "event") this.type = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.id = value; // resumable answers
    // retry is never sent by the Worker; unknown fields are ignored (rule 3).
    return null;
  }
}

function retryAfterSeconds(header) {
  if (!header) return null;
  const seconds = Number(header.trim());
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds);
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

async function errorFromResponse(response) {
  const outcome = {
    kind: "error",
    status: response.status,
    code: "http_error",
    message: `The server answered ${response.status}.`,
    requestId: response.headers.get("x-request-id"),
    retryAfter: retryAfterSeconds(response.headers.get("retry-after")),
  };
  try {
    const body = await response.json();
    if (body && body.error && typeof body.error.code === "string") {
      outcome.code = body.error.code;
      if (typeof body.error.message === "string") outcome.message = body.error.message;
      if (typeof body.request_id === "string") outcome.requestId = body.request_id;
    }
  } catch {
    // Not our JSON (a proxy's error page, say): keep the generic http_error.
  }
  return outcome;
}

/**
 * POST `messages` ([{role, content}, ...], the last from the user) to the chat endpoint
 * and read the answer as it streams. Resolves to an outcome (see the top of this file);
 * rejects only for a bad argument or when a callback throws.
 */
export async function streamChat(messages, options = {}) {
  if (!Array.isArray(messages)) throw new TypeError("messages must be an array");
  const {
    url = "/api/chat",
    streamsUrl = `${url}/streams`,
    signal,
    headers = {},
    extra = {}, // more request fields, e.g. {max_tokens: 200}
    resumable = false,
    resume = null, // {streamId, lastEventId}: read an answer already being made, no POST
    reconnectDelays = [250, 500, 1000, 2000],
    maxLineLength = DEFAULT_MAX_LINE,
    onMeta = () => {},
    onDelta = () => {},
    onReasoning = () => {},
    onToolCallStart = () => {},
    onToolCallDelta = () => {},
    onToolCall = () => {},
    onPing = () => {},
    onReconnecting = () => {},
    onStream = () => {},
  } = options;

  const state = { text: "", chunks: 0, requestId: null, model: null, streamId: resume?.streamId ?? null, resumed: 0, toolCalls: [] };
  const ending = (kind, fields = {}) => ({
    kind, text: state.text, chunks: state.chunks, requestId: state.requestId,
    streamId: state.streamId, resumed: state.resumed, toolCalls: state.toolCalls.slice(), ...fields,
  });
  const aborted = () => Boolean(signal && signal.aborted);
  const assembler = new EventAssembler(resume ? String(resume.lastEventId ?? "0") : "");
  // The connection's own abort: at once for a plain answer; for a resumable one only
  // after the server was asked to stop it (or STOP_WAIT_MS later, whatever happens).
  const connection = new AbortController();
  let stopSent = false;
  const sendStop = () => {
    if (stopSent || state.streamId === null) return;
    stopSent = true;
    fetch(`${streamsUrl}/${encodeURIComponent(state.streamId)}`, { method: "DELETE", headers, keepalive: true }).catch(() => {});
  };
  state.stopIfAsked = () => { if (aborted()) sendStop(); }; // once meta names the stream
  if (signal) {
    const onAbort = () => {
      if (!(resumable || resume)) return connection.abort();
      sendStop();
      setTimeout(() => connection.abort(), STOP_WAIT_MS);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  }

  const open = (init) => {
    if (state.streamId === null) {
      return fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
        body: JSON.stringify({ ...extra, ...(resumable ? { resumable: true } : {}), messages }),
        signal: connection.signal,
        cache: "no-store",
      });
    }
    const again = { accept: "text/event-stream", ...headers };
    if (assembler.lastEventId) again["last-event-id"] = assembler.lastEventId;
    return fetch(`${streamsUrl}/${encodeURIComponent(state.streamId)}`, { headers: again, signal: connection.signal, cache: "no-store", ...init });
  };

  const reading = { maxLineLength, onMeta, onDelta, onReasoning, onToolCallStart, onToolCallDelta, onToolCall, onPing, onStream, aborted };
  let outcome = await readOnce(await attempt(open), state, ending, assembler, reading);
  let failures = 0;
  while (outcome.kind === "truncated" && !outcome.gone && state.streamId !== null && (resumable || resume) && failures < reconnectDelays.length) {
    const progress = assembler.lastEventId;
    await sleep(reconnectDelays[failures], signal);
    if (aborted()) break;
    failures += 1;
    state.resumed += 1;
    onReconnecting(state.resumed);
    outcome = await readOnce(await attempt(open), state, ending, assembler, { ...reading, reconnecting: true });
    if (assembler.lastEventId !== progress) failures = 0; // it got further: count afresh
  }
  connection.abort(); // whatever is left of the connection (a no-op once it has ended)
  return aborted() ? ending("cancelled") : outcome;
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

const isIndex = (value) => Number.isSafeInteger(value) && value >= 0;

/** A `tool_call` event's call, or null when a field is missing or of the wrong type. The
 * input is the parsed arguments, a JSON object; when they are not one, `input` is null and
 * `input_error` says why. */
function toolCallOf(data) {
  if (!isIndex(data.index) || typeof data.call_id !== "string" || typeof data.name !== "string" || typeof data.arguments !== "string") return null;
  const call = { index: data.index, id: data.call_id, name: data.name, arguments: data.arguments, input: null };
  const isObject = data.input !== null && typeof data.input === "object" && !Array.isArray(data.input);
  if (isObject && data.input_error === undefined) call.input = data.input;
  else call.input_error = typeof data.input_error === "string" ? data.input_error : "The arguments are not a JSON object.";
  return call;
}

/** What a `done` says of the answer: {cut, skipped} (see the top of this file). */
function endingOf(done) {
  const reason = done.finish_reason ?? null;
  const cut = ENDED_BY_MODEL.has(reason) ? null : CUT_SHORT.has(reason) ? reason : "other";
  return { cut, skipped: Number.isSafeInteger(done.skipped) && done.skipped > 0 ? done.skipped : 0 };
}

/** The response of `open()`, or the error it failed with. */
async function attempt(open) {
  try {
    return { response: await open() };
  } catch (error) {
    return { error };
  }
}

/** Reads one response's events into `state`; resolves to the outcome of that response. */
async function readOnce({ response, error }, state, ending, assembler, options) {
  const { maxLineLength, onMeta, onDelta, onReasoning, onToolCallStart, onToolCallDelta, onToolCall, onPing, onStream, aborted, reconnecting = false } = options;
  if (error !== undefined) {
    if (aborted()) return ending("cancelled");
    // A reconnection that cannot reach the server is a drop that lasts: try again.
    if (reconnecting) return ending("truncated");
    return ending("error", { status: 0, code: "network_error", message: "Could not reach the server.", retryAfter: null });
  }
  state.requestId = state.requestId ?? response.headers.get("x-request-id");
  if (!response.ok) {
    // A reconnection refused for a passing reason (a 5xx on the way) is tried again; a
    // 404 means the answer is gone, which is what the text so far says: truncated.
    if (reconnecting) return response.status >= 500 ? ending("truncated") : ending("truncated", { gone: true });
    return { ...ending("error"), ...(await errorFromResponse(response)) };
  }
  const contentType = response.headers.get("content-type") || "";
  if (!contentType.startsWith("text/event-stream") || !response.body) {
    response.body?.cancel().catch(() => {});
    return ending("error", { status: response.status, code: "unexpected_response", message: "The server did not answer with an event stream.", retryAfter: null });
  }

  const reader = response.body.getReader();
  const decoder = new TextDecoder("utf-8"); // replaces invalid bytes with U+FFFD, never throws
  const splitter = new LineSplitter(maxLineLength);
  // Handles one complete event; returns the outcome when it is terminal, else null.
  const handle = (event) => {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      throw new MalformedStream("data is not JSON");
    }
    if (data === null || typeof data !== "object") throw new MalformedStream("data is not an object");
    switch (event.type) {
      case "meta":
        state.requestId = typeof data.request_id === "string" ? data.request_id : state.requestId;
        state.model = typeof data.model === "string" ? data.model : null;
        if (typeof data.stream_id === "string") state.streamId = data.stream_id;
        state.stopIfAsked?.();
        onMeta(data);
        return null;
      case "delta":
        if (typeof data.text !== "string" || aborted()) return null; // nothing after Stop
        state.text += data.text;
        state.chunks += 1;
        onDelta(data.text, state.text);
        return null;
      case "reasoning":
        if (typeof data.text === "string") onReasoning(data.text);
        return null;
      // Tool calls (docs/protocol.md): a start, fragments of the arguments, then the whole
      // call. A field of the wrong type makes the event one this client cannot use, so it
      // is skipped, as a delta without text is; nothing is passed on after Stop.
      case "tool_call_start":
        if (!isIndex(data.index) || typeof data.call_id !== "string" || typeof data.name !== "string" || aborted()) return null;
        onToolCallStart({ index: data.index, id: data.call_id, name: data.name });
        return null;
      case "tool_call_delta":
        if (!isIndex(data.index) || typeof data.arguments !== "string" || aborted()) return null;
        onToolCallDelta({ index: data.index, arguments: data.arguments });
        return null;
      case "tool_call": {
        const call = toolCallOf(data);
        if (call === null || aborted()) return null;
        state.toolCalls.push(call);
        onToolCall(call);
        return null;
      }
      case "done":
        return ending("complete", { model: state.model, done: data, ...endingOf(data) });
      case "error":
        return ending("error", {
          status: response.status,
          code: typeof data.code === "string" ? data.code : "internal_error",
          message: typeof data.message === "string" ? data.message : "The stream failed.",
          requestId: typeof data.request_id === "string" ? data.request_id : state.requestId,
          retryAfter: null,
        });
      default:
        return null; // an event type this client does not know (rule 3)
    }
  };

  const readLines = (text) => {
    for (const line of splitter.feed(text)) {
      const event = assembler.line(line);
      if (event === null) continue;
      if ("comment" in event) {
        if (event.comment === "ping") onPing();
        continue;
      }
      const outcome = handle(event);
      if (state.streamId !== null && assembler.lastEventId) onStream({ streamId: state.streamId, lastEventId: assembler.lastEventId });
      if (outcome) return outcome;
    }
    return null;
  };

  try {
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch {
        // An abort rejects the read; so does a connection that breaks mid-body.
        return aborted() ? ending("cancelled") : ending("truncated");
      }
      if (chunk.done) {
        // Flush a character split at the very end; an unfinished event is not dispatched.
        const outcome = readLines(decoder.decode());
        return outcome || (aborted() ? ending("cancelled") : ending("truncated"));
      }
      const outcome = readLines(decoder.decode(chunk.value, { stream: true }));
      if (outcome) return outcome; // rule 2: nothing follows a terminal event
    }
  } catch (error) {
    if (!(error instanceof MalformedStream)) throw error; // a bug in a callback: surface it
    return ending("error", { status: response.status, code: "malformed_stream", message: "The answer could not be read.", retryAfter: null });
  } finally {
    reader.cancel().catch(() => {}); // releases the connection; a no-op once it has ended
  }
}
