// The relay's per-chunk plumbing, for chat/stream/relay.py, which makes every decision.
//
// Why JS at all: handing a chunk to Python as a string, and taking back a string, costs a
// fraction of a transform written in Python. That one takes the chunk and the controller
// as two new proxies per call, copies the bytes in and out, and calls back into JS to
// enqueue (docs/benchmarks.md has the figures). Here each chunk is one call into Python
// with one string argument and one string result; nothing else crosses per chunk.

const STREAMING = { stream: true };  // made once: an object per chunk is garbage per token

// A chunk over maxSliceBytes is handed over in slices of that size (relay.py's
// MAX_FEED_BYTES). onStart(controller) once; onText(text) per slice of decoded upstream
// text, returning the
// text to send ("" for none), or undefined once the stream is over (Python then has sent
// its last frame and terminated the stream itself); onBroken(name) for a chunk that is not
// bytes; onCancel() when the client goes away.
export function pythonTransformer(maxSliceBytes, onStart, onText, onBroken, onCancel) {
  // Non-fatal: invalid bytes become U+FFFD, as the event-stream spec says. With
  // {stream: true} a character split across chunks waits for the rest. ignoreBOM keeps
  // every U+FEFF: workerd's decoder would drop one at the start of each decode() call,
  // that is of any chunk, and the Python core already drops the stream's leading BOM.
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  const encoder = new TextEncoder();
  return {
    start(controller) {
      onStart(controller);
    },
    transform(chunk, controller) {
      const bytes = asBytes(chunk);
      if (bytes === null) {
        onBroken("TypeError");
        return;
      }
      let at = 0;
      do {
        let text;
        try {
          const slice = bytes.byteLength > maxSliceBytes ? bytes.subarray(at, at + maxSliceBytes) : bytes;
          text = decoder.decode(slice, STREAMING);
        } catch (error) {
          onBroken(error?.name ?? "Error");  // a detached buffer, say
          return;
        }
        const out = onText(text);
        if (out === undefined) return;
        if (out) controller.enqueue(encoder.encode(out));
        at += maxSliceBytes;
      } while (at < bytes.byteLength);
    },
    cancel() {
      onCancel();
    },
  };
}

function asBytes(chunk) {
  if (chunk instanceof Uint8Array) return chunk;
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  return null;
}
