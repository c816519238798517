// The relay's plumbing, for chat/stream/relay.py. One owner per job: this module owns the
// stream machinery (the controller, the pipe, the timer, termination); Python answers
// "text in, text out" and "tick, text out" and makes every decision.
//
// Why JS at all: handing a chunk to Python as a string, and taking back a string, costs a
// fraction of a transform written in Python, which takes the chunk and the controller as
// two new proxies per call, copies the bytes in and out, and calls back into JS to
// enqueue (docs/benchmarks.md has the figures). Here each chunk is one call into Python
// with one string argument and one string result; nothing else crosses per chunk.

// What Python returns for the last text of a stream: after it, nothing more is sent and
// the stream is terminated (which makes the pipe cancel the upstream). Made with `last()`.
class Last {
  constructor(text) {
    this.text = text;
  }
}

export function last(text) {
  return new Last(text);
}

const STREAMING = { stream: true };  // made once: an object per chunk is garbage per token
const PIPE = { preventClose: true, preventAbort: true };

// Relays `upstream` (a ReadableStream of bytes) through Python, and returns { readable,
// settled, end }: the body to send; a promise that resolves once the pipe has settled and
// onEnded has answered (nothing of Python's is called after it); end(text) sends `text`
// and terminates, for an ending Python decides on its own (a stop).
//
// Python's callbacks, each returning the text to send ("" for none) or last(text):
//   onStart()            once, first;
//   onText(text)         per slice of decoded upstream text (a chunk over maxSliceBytes
//                        is handed over in slices of that size: relay.py's MAX_FEED_BYTES);
//   onTick(clientBehind) when the timer fires; clientBehind: sent bytes wait unread;
//   onBroken(name)       for a chunk that is not bytes: always last(...);
//   onEnded(failed)      once, when the pipe settles (failed: the upstream errored); its
//                        text is sent unless the stream is over already.
// and onDelay() (milliseconds until the next tick, asked after onStart and each tick) and
// onLeft() (the client went away; the pipe then cancels the upstream).
export function relay(upstream, maxSliceBytes, onStart, onText, onTick, onBroken, onEnded, onDelay, onLeft) {
  // Non-fatal: invalid bytes become U+FFFD, as the event-stream spec says. With
  // {stream: true} a character split across chunks waits for the rest. ignoreBOM keeps
  // every U+FEFF: workerd's decoder would drop one at the start of each decode() call,
  // that is of any chunk, and the Python core drops the stream's leading BOM.
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  const encoder = new TextEncoder();
  let controller = null;
  let timer = null;
  let over = false;  // nothing more will be sent, and Python is asked nothing more but onEnded
  let failure = null;  // the first error a callback threw: `settled` rejects with it

  function terminate() {
    over = true;
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    try {
      controller?.terminate();
    } catch {
      // already closed by the other side
    }
  }

  function enqueue(text) {
    if (!text) return;
    try {
      controller.enqueue(encoder.encode(text));
    } catch {
      // the client left while we were writing; the cancel callback says so
    }
  }

  // Asks Python and sends its answer; true once the stream is over. A callback that
  // throws (a bug) ends the stream at once, without a terminal event: its client sees an
  // answer cut off, never a hang, and never a cut answer shown as complete.
  function ask(callback, ...args) {
    let out;
    try {
      out = callback(...args);
    } catch (error) {
      fail(error);
      return true;
    }
    return send(out);
  }

  function fail(error) {
    failure ??= error;
    terminate();
  }

  function send(out) {
    if (out instanceof Last) {
      enqueue(out.text);
      terminate();
      return true;
    }
    enqueue(out);
    return false;
  }

  function schedule() {
    let delay;
    try {
      delay = onDelay();
    } catch (error) {
      fail(error);
      return;
    }
    timer = setTimeout(tick, delay);
  }

  function tick() {
    timer = null;
    if (over) return;
    if (!ask(onTick, controller.desiredSize < 0)) schedule();
  }

  const transformer = {
    start(ctrl) {
      controller = ctrl;
      if (!ask(onStart)) schedule();
    },
    transform(chunk) {
      if (over) return;
      const bytes = asBytes(chunk);
      if (bytes === null) {
        ask(onBroken, "TypeError");
        return;
      }
      let at = 0;
      do {
        let text;
        try {
          const slice = bytes.byteLength > maxSliceBytes ? bytes.subarray(at, at + maxSliceBytes) : bytes;
          text = decoder.decode(slice, STREAMING);
        } catch (error) {
          ask(onBroken, error?.name ?? "Error");  // a detached buffer, say
          return;
        }
        if (ask(onText, text)) return;
        at += maxSliceBytes;
      } while (at < bytes.byteLength);
    },
    cancel() {
      if (over) return;
      over = true;
      if (timer !== null) {
        clearTimeout(timer);
        timer = null;
      }
      onLeft();
    },
  };
  const stream = new TransformStream(transformer);
  // pipeTo with preventClose/preventAbort rather than pipeThrough: the terminal event is
  // written after the upstream ends or fails. With pipeThrough an upstream error would
  // error the readable too and tear the connection with no `error` event.
  const settled = upstream.pipeTo(stream.writable, PIPE).then(
    () => false,
    () => true,
  ).then((failed) => {
    try {
      const out = onEnded(failed);
      if (!over) enqueue(out);
    } finally {
      terminate();
    }
    if (failure !== null) throw failure;
  });
  return {
    readable: stream.readable,
    settled,
    end(text) {
      if (over) return;
      enqueue(text);
      terminate();
    },
  };
}

function asBytes(chunk) {
  if (chunk instanceof Uint8Array) return chunk;
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  return null;
}
