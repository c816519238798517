// The benchmark's anchor: the same re-framing as the Python Worker's /api/chat, written
// the way the Workers docs show it, as a JS TransformStream. Same emulator, same protocol
// (meta, delta with padding, one done/error), so CPU can be compared side by side.
const encoder = new TextEncoder();
const PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

function frame(event, payload) {
  return `event: ${event}\ndata: ${JSON.stringify(payload)}\n\n`;
}

function reframer(requestId, model) {
  const decoder = new TextDecoder();
  let pending = "";
  let sawDone = false;
  let chunks = 0;
  let chars = 0;
  let skipped = 0;
  let usage = null;
  let finishReason = null;
  const padding = () => PADDING.slice(0, Math.floor(Math.random() * 33));

  function lines(text) {
    let out = "";
    for (const line of text.split("\n")) {
      const trimmed = line.endsWith("\r") ? line.slice(0, -1) : line;
      if (!trimmed.startsWith("data:") || sawDone) continue;
      const data = trimmed.slice(5).trim();
      if (data === "[DONE]") {
        sawDone = true;
        continue;
      }
      let parsed;
      try {
        parsed = JSON.parse(data);
      } catch {
        skipped++;
        continue;
      }
      if (parsed.usage) usage = parsed.usage;
      if (parsed.finish_reason) finishReason = parsed.finish_reason;
      // Native frames carry `response`; OpenAI-style chunks (most current models) carry
      // choices[0].delta with content or reasoning, and finish_reason on the usage chunk.
      const choice = parsed.choices?.[0];
      if (choice?.finish_reason) finishReason = choice.finish_reason;
      const thought = choice?.delta?.reasoning_content ?? choice?.delta?.reasoning;
      if (typeof thought === "string" && thought.length > 0) out += frame("reasoning", { text: thought, p: padding() });
      const text = parsed.response ?? choice?.delta?.content;
      if (typeof text === "string" && text.length > 0) {
        chunks++;
        chars += text.length;
        out += frame("delta", { text, p: padding() });
      }
    }
    return out;
  }

  return new TransformStream({
    start(controller) {
      controller.enqueue(encoder.encode(frame("meta", { request_id: requestId, model })));
    },
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      const end = pending.lastIndexOf("\n");
      if (end < 0) return;
      const out = lines(pending.slice(0, end));
      pending = pending.slice(end + 1);
      if (out) controller.enqueue(encoder.encode(out));
    },
    flush(controller) {
      const tail = lines(pending + decoder.decode());
      const terminal = sawDone
        ? frame("done", { finish_reason: finishReason, usage, chunks, chars, skipped })
        : frame("error", { code: "upstream_incomplete", message: "The model stream ended before it was complete.", request_id: requestId });
      controller.enqueue(encoder.encode(tail + terminal));
    },
  });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/health") return Response.json({ status: "ok" });
    const { messages } = await request.json();
    const requestId = crypto.randomUUID().replaceAll("-", "");
    const model = env.MODEL;
    const upstream = await env.AI.run(model, { messages, stream: true });
    const path = url.pathname === "/api/chat/raw" ? upstream : upstream.pipeThrough(reframer(requestId, model));
    return new Response(path, {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-request-id": requestId },
    });
  },
};
