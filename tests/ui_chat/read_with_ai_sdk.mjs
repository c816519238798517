// Reads /api/ui-chat with the real `ai` package, the way useChat does: DefaultChatTransport
// sends the UIMessages and parses the stream, readUIMessageStream assembles the message.
// Usage: node read_with_ai_sdk.mjs URL 'JSON array of UIMessages'
// Prints one JSON line: {"text", "parts", "errors", "chunks"}.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, messagesJson] = process.argv.slice(2);
const messages = JSON.parse(messagesJson);
const transport = new DefaultChatTransport({ api: url });
const errors = [];
const chunkTypes = [];

const chunks = await transport.sendMessages({
  chatId: "chat-1",
  messages,
  trigger: "submit-message",
  messageId: undefined,
  abortSignal: undefined,
});
const [forReader, forLog] = chunks.tee();
const logging = (async () => {
  for await (const chunk of forLog) chunkTypes.push(chunk.type);
})();

let last;
for await (const message of readUIMessageStream({ stream: forReader, onError: (e) => errors.push(String(e?.message ?? e)) })) {
  last = message;
}
await logging;
const text = (last?.parts ?? []).filter((p) => p.type === "text").map((p) => p.text).join("");
console.log(JSON.stringify({ text, parts: last?.parts ?? [], id: last?.id, metadata: last?.metadata, errors, chunks: chunkTypes }));
