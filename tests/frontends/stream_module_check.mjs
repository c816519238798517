// Runs public/chat-stream.js in Node 24 (the same fetch/streams/TextDecoder APIs as a
// browser), for tests/frontends/test_stream_module.py:
//
//   node tests/frontends/stream_module_check.mjs WORKER_URL QUESTION
//
// `worker` reads a real answer from the runtime. The other cases need bodies the Worker
// never sends (byte-by-byte delivery, other line ends, a body without terminal event, a
// proxy's HTML error page), so a local server written here serves them. Prints one JSON
// line, {case: observations}; the pytest side asserts.
import { createServer } from "node:http";
import { streamChat } from "../../public/chat-stream.js";

const encoder = new TextEncoder();
let hangClosed = false;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const event = (type, data, lineEnd = "\n") =>
  `event: ${type}${lineEnd}data: ${JSON.stringify(data)}${lineEnd}${lineEnd}`;

// Every line end the event-stream format allows, a comment, an event type this client does
// not know, and a 4-byte character; sent one byte at a time.
const MIXED_BODY =
  event("meta", { request_id: "r-1", model: "m" }, "\r\n") +
  event("delta", { text: "Grüße ", p: "xx" }, "\r") +
  ": ping\n\n" +
  event("future", { anything: true }) +
  event("reasoning", { text: "thinking", p: "" }) +
  event("delta", { text: "🚀 line\u2028sep\nnext", p: "" }, "\r\n") +
  "retry: 10\nid: 7\n" + event("done", { finish_reason: "stop", usage: null, chunks: 2, chars: 21, skipped: 0 });

// Two tool calls (one whose arguments are not JSON), with events of the right type but
// wrong fields in between, which are skipped; sent 7 bytes at a time (cuts inside lines and
// inside the 4-byte character).
const TOOLS_BODY =
  event("meta", { request_id: "r-5", model: "m" }) +
  event("delta", { text: "Checking.", p: "" }) +
  event("tool_call_start", { index: 0, call_id: "call_1", name: "current_time", p: "xy" }) +
  event("tool_call_delta", { index: 0, arguments: "{\"timezone\":", p: "" }) +
  event("tool_call_delta", { index: 0, arguments: 7, p: "" }) +
  event("tool_call_delta", { index: 0, arguments: "\"UTC\"}", p: "" }) +
  event("tool_call", { index: 0, call_id: "call_1", name: "current_time", arguments: "{\"timezone\":\"UTC\"}", input: { timezone: "UTC" } }) +
  event("tool_call_start", { index: -1, call_id: "call_x", name: "nope", p: "" }) +
  event("tool_call_start", { index: 1, call_id: "call_2", name: "current_time", p: "" }) +
  event("tool_call_delta", { index: 1, arguments: "{\"timezone\": 🕰", p: "" }) +
  event("tool_call", { index: 1, call_id: "call_2", name: "current_time", arguments: "{\"timezone\": 🕰", input: null, input_error: "Expecting value" }) +
  event("tool_call", { index: 2, call_id: "call_3", name: 5, arguments: "{}", input: {} }) +
  event("done", { finish_reason: "tool_calls", usage: null, chunks: 1, chars: 9, skipped: 0, tool_calls: 2 });

const routes = {
  async "/mixed"(response) {
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    for (const byte of encoder.encode(MIXED_BODY)) {
      response.write(Uint8Array.of(byte));
      await sleep(0);
    }
    response.end();
  },
  async "/tools"(response) {
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    const body = encoder.encode(TOOLS_BODY);
    for (let start = 0; start < body.length; start += 7) {
      response.write(body.slice(start, start + 7));
      await sleep(0);
    }
    response.end();
  },
  async "/cut"(response) {
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    response.end(event("meta", { request_id: "r-2", model: "m" }) + event("delta", { text: "half an", p: "" }) + "event: delta\ndata: {\"te");
  },
  async "/hang"(response) {
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    response.write(event("meta", { request_id: "r-3", model: "m" }) + event("delta", { text: "before stop", p: "" }));
    response.on("close", () => { hangClosed = true; });
  },
  async "/limited"(response) {
    response.writeHead(429, { "content-type": "application/json", "retry-after": "7", "x-request-id": "r-4" });
    response.end(JSON.stringify({ error: { code: "rate_limited", message: "Too many requests." }, request_id: "r-4" }));
  },
  async "/proxy-error"(response) {
    response.writeHead(502, { "content-type": "text/html" });
    response.end("<html>Bad gateway</html>");
  },
  // A resumable answer whose first connection drops after two deltas; its stream route
  // serves the rest after the Last-Event-ID it is given, and records what it was asked.
  async "/drop/api/chat"(response, request) {
    resumeLog.push({ method: request.method, path: "/api/chat", body: await bodyOf(request) });
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    response.end(RESUMABLE_EVENTS.slice(0, 3).join(""));
  },
  async "/drop/api/chat/streams/s-1"(response, request) {
    const after = Number(request.headers["last-event-id"] ?? 0);
    resumeLog.push({ method: request.method, path: "/api/chat/streams/s-1", lastEventId: request.headers["last-event-id"] ?? null });
    if (request.method === "DELETE") return response.writeHead(204).end();
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    response.end(RESUMABLE_EVENTS.slice(after).join(""));
  },
  async "/gone/api/chat"(response) {
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    response.end(RESUMABLE_EVENTS.slice(0, 2).join(""));
  },
  async "/gone/api/chat/streams/s-1"(response) {
    response.writeHead(404, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: { code: "stream_not_found", message: "gone" }, request_id: "r-9" }));
  },
  async "/stop/api/chat"(response, request) {
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    response.write(RESUMABLE_EVENTS.slice(0, 2).join(""));
    request.on("close", () => {});
  },
  async "/stop/api/chat/streams/s-1"(response, request) {
    resumeLog.push({ method: request.method, path: "/stop/api/chat/streams/s-1" });
    response.writeHead(204).end();
  },
  async "/garbled"(response) {
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end("event: delta\ndata: {not json\n\n");
  },
  // Some text, then the `done` given as JSON in the query's `done`.
  async "/ended"(response, request) {
    const done = JSON.parse(new URL(request.url, "http://x").searchParams.get("done"));
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    response.end(event("meta", { request_id: "r-7", model: "m" }) + event("delta", { text: "Some text", p: "" }) + event("done", done));
  },
};

// The `done` events of the ending cases, by name (docs/protocol.md, `done`).
const ENDINGS = {
  stop: { finish_reason: "stop", skipped: 0 },
  toolCalls: { finish_reason: "tool_calls", skipped: 0 },
  functionCall: { finish_reason: "function_call", skipped: 0 },
  unsaid: { finish_reason: null, skipped: 0 },
  absent: {},
  length: { finish_reason: "length", skipped: 0 },
  contentFilter: { finish_reason: "content_filter", skipped: 0 },
  other: { finish_reason: "other", skipped: 0 },
  unknown: { finish_reason: "paused_for_a_reason_not_yet_documented", skipped: 0 },
  stopWithGaps: { finish_reason: "stop", skipped: 3 },
  lengthWithGaps: { finish_reason: "length", skipped: 1 },
  skippedNotACount: { finish_reason: "stop", skipped: "2" },
  skippedNegative: { finish_reason: "stop", skipped: -1 },
};

const withId = (id, type, data) => `id: ${id}\n` + event(type, data);
const RESUMABLE_EVENTS = [
  withId(1, "meta", { request_id: "r-8", model: "m", stream_id: "s-1" }),
  withId(2, "delta", { text: "one ", p: "" }),
  withId(3, "delta", { text: "two ", p: "" }),
  ": ping\n\n",
  withId(4, "delta", { text: "three", p: "" }),
  withId(5, "done", { finish_reason: "stop", usage: null, chunks: 3, chars: 13, skipped: 0 }),
];
const resumeLog = [];
const bodyOf = (request) => new Promise((resolve) => {
  let text = "";
  request.on("data", (chunk) => { text += chunk; });
  request.on("end", () => resolve(JSON.parse(text)));
});

async function observe(url, options = {}) {
  const seen = { deltas: [], metas: [], reasoning: [], pings: 0, reconnecting: [], toolStarts: [], toolDeltas: [], toolCalls: [] };
  const outcome = await streamChat([{ role: "user", content: options.question ?? "hi" }], {
    url,
    signal: options.signal,
    onMeta: (meta) => seen.metas.push(meta),
    onDelta: (text) => seen.deltas.push(text),
    onReasoning: (text) => seen.reasoning.push(text),
    onPing: () => { seen.pings += 1; },
    onToolCallStart: (start) => seen.toolStarts.push(start),
    onToolCallDelta: (delta) => seen.toolDeltas.push(delta),
    onToolCall: (call) => seen.toolCalls.push(call),
    resumable: options.resumable,
    reconnectDelays: [10, 10],
    onReconnecting: (attempt) => seen.reconnecting.push(attempt),
    onStream: (where) => { seen.lastStream = where; },
  });
  return { ...outcome, seen };
}

async function main() {
  const [workerUrl, question] = process.argv.slice(2);
  const server = createServer((request, response) => {
    const route = routes[new URL(request.url, "http://x").pathname];
    if (route.length < 2) request.resume(); // routes that read the request take it whole
    route(response, request);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  const results = {};
  try {
    results.worker = await observe(workerUrl + "/api/chat", { question });
    results.mixed = await observe(base + "/mixed");
    results.cut = await observe(base + "/cut");
    results.tools = await observe(base + "/tools");
    const controller = new AbortController();
    const stopping = observe(base + "/hang", { signal: controller.signal });
    await sleep(300);
    controller.abort();
    results.hang = await stopping;
    await sleep(100);
    results.hang.serverSawClose = hangClosed;
    results.limited = await observe(base + "/limited");
    results.proxyError = await observe(base + "/proxy-error");
    results.garbled = await observe(base + "/garbled");
    results.endings = {};
    for (const [name, done] of Object.entries(ENDINGS)) {
      const { kind, text, cut, skipped } = await observe(`${base}/ended?done=${encodeURIComponent(JSON.stringify(done))}`);
      results.endings[name] = { kind, text, cut, skipped };
    }
    results.nobody = await observe("http://127.0.0.1:9/api/chat");
    results.workerResumable = await observe(workerUrl + "/api/chat", { question, resumable: true });
    results.dropped = await observe(base + "/drop/api/chat", { resumable: true });
    results.dropped.log = resumeLog.splice(0);
    results.gone = await observe(base + "/gone/api/chat", { resumable: true });
    const stopper = new AbortController();
    const stopped = observe(base + "/stop/api/chat", { resumable: true, signal: stopper.signal });
    await sleep(200);
    stopper.abort();
    results.stopped = await stopped;
    await sleep(200);
    results.stopped.log = resumeLog.splice(0);
  } finally {
    server.closeAllConnections();
    server.close();
  }
  console.log(JSON.stringify(results));
}

setTimeout(() => { console.log(JSON.stringify({ failed: "watchdog" })); process.exit(1); }, 30_000).unref();
await main();
