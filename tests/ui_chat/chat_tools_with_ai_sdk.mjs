// Tool calls on /api/ui-chat through the real `ai` package, the way useChat drives them:
// the SDK's own AbstractChat (what @ai-sdk/react's Chat extends, here with a plain in-memory
// state) over DefaultChatTransport, which parses the UI message stream; every request the
// transport sends and every chunk it parses are logged.
//
// Usage: node chat_tools_with_ai_sdk.mjs MODE URL 'JSON config'
//   loop   {chatId, text, tools, output}: sends `text` offering `tools`, with
//          sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls; once the answer
//          is in, adds `output` to its first tool part with addToolOutput (the SDK then sends
//          the next turn by itself), and waits until the SDK has decided, after that turn, not
//          to send again (or gave up waiting).
//   resume {chatId, text, tools}: a resumable turn read live by one Chat while a second Chat
//          of the same chat id (a reloaded page) calls resumeStream() once the live one has
//          its first part; then reconnects once more after the answer finished.
//   read   {chatId, text, tools}: one turn, no automatic sending.
// Prints one JSON line (see the end of the file).
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } from "ai";

const [mode, url, configJson] = process.argv.slice(2);
const config = JSON.parse(configJson);
const MAX_REQUESTS = 4; // a loop that never stops is cut here, so the test can see it

// The state useChat keeps in React, kept in memory: replaced, never mutated, as there.
class MemoryState {
  constructor(messages = []) {
    this.status = "ready";
    this.error = undefined;
    this.messages = messages;
  }
  pushMessage = (message) => { this.messages = this.messages.concat(message); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (index, message) => {
    this.messages = [...this.messages.slice(0, index), this.snapshot(message), ...this.messages.slice(index + 1)];
  };
  snapshot = (thing) => structuredClone(thing);
}

class Chat extends AbstractChat {
  constructor({ messages, ...init }) {
    super({ ...init, state: new MemoryState(messages) });
  }
}

// DefaultChatTransport as it is, with its requests and parsed chunks written down.
class LoggingTransport extends DefaultChatTransport {
  constructor(log, options) {
    const fetching = async (input, init) => {
      log.requests.push({ method: init?.method ?? "GET", url: String(input), body: init?.body ? JSON.parse(init.body) : null });
      if (log.requests.length > MAX_REQUESTS) throw new Error(`more than ${MAX_REQUESTS} requests: the SDK kept sending`);
      return fetch(input, init);
    };
    super({ ...options, api: url, fetch: fetching });
    this.log = log;
  }
  processResponseStream(stream) {
    const chunks = [];
    this.log.responses.push(chunks);
    return super.processResponseStream(stream).pipeThrough(new TransformStream({
      transform(chunk, controller) {
        chunks.push(chunk);
        controller.enqueue(chunk);
      },
    }));
  }
}

const newLog = () => ({ requests: [], responses: [] });
const errors = [];
const onError = (error) => errors.push(String(error?.message ?? error));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(condition, what, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}
const isToolPart = (part) => part.type.startsWith("tool-") || part.type === "dynamic-tool";
const userMessage = (text) => ({ id: "u1", role: "user", parts: [{ type: "text", text }] });

let result;
if (mode === "loop") {
  const log = newLog();
  const decisions = [];
  const chat = new Chat({
    id: config.chatId,
    transport: new LoggingTransport(log, { body: { tools: config.tools } }),
    onError,
    sendAutomaticallyWhen: async ({ messages }) => {
      const decision = lastAssistantMessageIsCompleteWithToolCalls({ messages });
      decisions.push(decision);
      return decision;
    },
  });
  await chat.sendMessage(userMessage(config.text)); // the first answer, and the SDK's decision after it
  const afterFirst = structuredClone(chat.messages);
  const call = chat.lastMessage?.parts.find(isToolPart);
  let added = false;
  if (call && chat.status === "ready") {
    await chat.addToolOutput({ tool: call.type.slice("tool-".length), toolCallId: call.toolCallId, output: config.output });
    added = true;
    // The SDK decides once after the result is added (and sends), once after that answer.
    await until(() => decisions.length >= 3 && chat.status !== "submitted" && chat.status !== "streaming", "the answer after the tool result")
      .catch(onError);
    await sleep(300); // room for a request the SDK should not send
  }
  result = { log, decisions, afterFirst, added, messages: chat.messages, status: chat.status };
} else if (mode === "resume") {
  const liveLog = newLog();
  const reloadedLog = newLog();
  const transport = new LoggingTransport(liveLog, { body: { tools: config.tools, resumable: true } });
  const live = new Chat({ id: config.chatId, transport, onError });
  const user = userMessage(config.text);
  const sending = live.sendMessage(user);
  await until(() => live.lastMessage?.role === "assistant" && live.lastMessage.parts.length > 1, "the live answer's first part");
  const reloaded = new Chat({ id: config.chatId, messages: [user], transport: new LoggingTransport(reloadedLog, {}), onError });
  await reloaded.resumeStream();
  await sending;
  const afterFinish = await transport.reconnectToStream({ chatId: config.chatId });
  result = {
    live: { log: liveLog, messages: live.messages, status: live.status },
    reloaded: { log: reloadedLog, messages: reloaded.messages, status: reloaded.status },
    afterFinish: afterFinish !== null,
  };
} else if (mode === "read") {
  const log = newLog();
  const chat = new Chat({ id: config.chatId, transport: new LoggingTransport(log, { body: { tools: config.tools } }), onError });
  await chat.sendMessage(userMessage(config.text));
  result = { log, messages: chat.messages, status: chat.status };
} else {
  throw new Error(`unknown mode ${mode}`);
}
console.log(JSON.stringify({ ...result, errors }));
