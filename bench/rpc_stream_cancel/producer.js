// The producer: a stream served over RPC, like the Workers AI emulator's. Each pull waits
// 50 ms (a token being generated), then sends one chunk. Logs when a pull begins, when
// its chunk is sent, and when the stream is cancelled.
import { WorkerEntrypoint } from "cloudflare:workers";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (record) => console.log(JSON.stringify(record));
const chunk = new TextEncoder().encode("data: token\n\n");

export default class Producer extends WorkerEntrypoint {
  // keepAlive: hold this call's context with waitUntil until the stream ends or is cancelled.
  stream(id, keepAlive) {
    let settle = () => {};
    if (keepAlive) this.ctx.waitUntil(new Promise((resolve) => { settle = resolve; }));
    return new ReadableStream({
      async pull(controller) {
        log({ event: "pull", id });
        await sleep(50);
        controller.enqueue(chunk);
        log({ event: "sent", id });
      },
      cancel() {
        log({ event: "cancelled", id });
        settle();
      },
    }, { highWaterMark: 0 });
  }
}
