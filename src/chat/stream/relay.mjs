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

// A model asked for its whole answer (a JSON mode that does not stream, catalog.py's
// JsonMode), as the stream of event-stream bytes every model call gives the relay: nothing
// until Python delivers the answer (the relay pings meanwhile, and its idle timeout bounds
// the wait), then the answer as one frame in the model's own framing, its usage, and
// [DONE]. A failed call becomes an in-band error frame, which the normalizer reads as any
// other (its code, never its text, reaches the client). Returns { readable, deliver(answer),
// fail(message) }; either after the reader has gone is a no-op. `aborter`: the call's
// AbortController, aborted when the reader leaves.
export function wholeAnswer(aborter) {
  const bytes = new TextEncoder();
  const frame = (payload) => bytes.encode(`data: ${JSON.stringify(payload)}\n\n`);
  let settle;
  const outcome = new Promise((resolve) => {
    settle = resolve; // the first settle wins: later ones are no-ops
  });
  let upstream = null; // a binding that streamed after all: its reader, read as it is pulled
  const readable = new ReadableStream({
    async pull(controller) {
      if (upstream === null) {
        const { answer, error } = await outcome;
        if (error !== undefined) {
          controller.enqueue(frame({ error }));
          controller.close();
          return;
        }
        if (typeof answer?.getReader !== "function") {
          for (const payload of wholeAnswerFrames(answer)) controller.enqueue(frame(payload));
          controller.enqueue(bytes.encode("data: [DONE]\n\n"));
          controller.close();
          return;
        }
        upstream = answer.getReader();
      }
      const { done, value } = await upstream.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) {
      settle({ error: "cancelled" });
      aborter?.abort(); // where the binding carries the signal, the model stops writing
      return upstream?.cancel(reason);
    },
  });
  return {
    readable,
    deliver: (answer) => settle({ answer }),
    fail: (message) => settle({ error: String(message) }),
  };
}

// A JSON-mode `response` is an object, not the string the types promise (the JSON-mode
// page's example; workers-sdk #12398): it is the answer, serialized.
const answerText = (value) => (typeof value === "string" ? value : value === undefined || value === null ? "" : JSON.stringify(value));

function* wholeAnswerFrames(answer) {
  const choice = Array.isArray(answer?.choices) ? answer.choices[0] : undefined;
  if (choice !== undefined) {
    // OpenAI's completion: its message becomes one chunk's delta.
    const message = choice?.message ?? {};
    const delta = {};
    for (const field of ["reasoning_content", "reasoning"]) if (typeof message[field] === "string") delta[field] = message[field];
    delta.content = answerText(message.content);
    if (Array.isArray(message.tool_calls)) delta.tool_calls = message.tool_calls.map((call, index) => ({ index, ...call }));
    yield { choices: [{ index: 0, delta, finish_reason: choice?.finish_reason ?? null }] };
    if (answer.usage) yield { choices: [], usage: answer.usage };
    return;
  }
  yield { response: answerText(answer?.response), ...(Array.isArray(answer?.tool_calls) ? { tool_calls: answer.tool_calls } : {}) };
  if (answer?.usage) yield { response: "", usage: answer.usage };
}
