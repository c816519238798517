// The consumer: reads the first chunk of the producer's stream, then cancels it, either
// while its request is still being answered ("during") or after its response was sent,
// from ctx.waitUntil ("after"), as a Durable Object does once the request that started
// the stream has ended.
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const id = url.searchParams.get("id");
    if (id === null) return new Response("ready");
    const reader = (await env.PRODUCER.stream(id, url.searchParams.has("keep"))).getReader();
    await reader.read();
    const wait = Number(url.searchParams.get("wait"));
    const stop = async () => {
      await new Promise((resolve) => setTimeout(resolve, wait));
      await reader.cancel();
    };
    if (url.searchParams.get("when") === "after") {
      ctx.waitUntil(stop());
      return new Response("cancelling after this response");
    }
    await stop();
    return new Response("cancelled");
  },
};
