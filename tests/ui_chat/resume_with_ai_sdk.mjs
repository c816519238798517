// Drops and resumes a resumable /api/ui-chat answer with the real `ai` package, as
// useChat({ resume: true }) does after a reload: the POST is aborted after a few chunks,
// then DefaultChatTransport.reconnectToStream fetches the chat's answer in progress (from
// its start) and readUIMessageStream assembles it; once it has finished, reconnecting
// finds none (null, from a 204).
// Usage: node resume_with_ai_sdk.mjs URL CHAT_ID 'JSON array of UIMessages' CHUNKS_BEFORE_DROP
// Prints one JSON line: {"before", "text", "errors", "chunks", "afterFinish"}.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, chatId, messagesJson, dropAfter] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api: url, body: { resumable: true } });
const dropped = new AbortController();

const first = await transport.sendMessages({
  chatId,
  messages: JSON.parse(messagesJson),
  trigger: "submit-message",
  messageId: undefined,
  abortSignal: dropped.signal,
});
const before = [];
const reader = first.getReader();
while (before.length < Number(dropAfter)) {
  const { value, done } = await reader.read();
  if (done) break;
  before.push(value.type);
}
dropped.abort();
await reader.cancel().catch(() => {});

const resumed = await transport.reconnectToStream({ chatId });
const errors = [];
const chunkTypes = [];
let last;
if (resumed !== null) {
  const [forReader, forLog] = resumed.tee();
  const logging = (async () => {
    for await (const chunk of forLog) chunkTypes.push(chunk.type);
  })();
  for await (const message of readUIMessageStream({ stream: forReader, onError: (e) => errors.push(String(e?.message ?? e)) })) {
    last = message;
  }
  await logging;
}
const afterFinish = await transport.reconnectToStream({ chatId });
const text = (last?.parts ?? []).filter((p) => p.type === "text").map((p) => p.text).join("");
console.log(JSON.stringify({ before, text, errors, chunks: chunkTypes, resumed: resumed !== null, afterFinish: afterFinish !== null }));
