// The benchmark's second floor: the emulator's stream relayed through one JS identity
// TransformStream (no parsing), so leaving workerd's native pipe is measured on its own.
export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === "/health") return Response.json({ status: "ok" });
    const { messages } = await request.json();
    const upstream = await env.AI.run(env.MODEL, { messages, stream: true });
    return new Response(upstream.pipeThrough(new TransformStream()), { headers: { "content-type": "text/event-stream" } });
  },
};
