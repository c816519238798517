// src/chat/stream/relay.mjs with JS stand-ins for the Python callbacks, in Node: the plumbing's
// own rules (slicing, decoding across chunks, stopping when Python says the stream is
// over). What crosses into Python is tested in the runtime (tests/runtime).
import { pythonTransformer } from "../../src/chat/stream/relay.mjs";

const SLICE = 64 * 1024;

function run(chunks, { overAfter = Infinity } = {}) {
  const seen = [];
  const sent = [];
  let broken = null;
  let cancelled = false;
  const transformer = pythonTransformer(
    SLICE,
    () => {},
    (text) => { seen.push(text); return seen.length > overAfter ? undefined : text.toUpperCase(); },
    (name) => { broken = name; },
    () => { cancelled = true; },
  );
  const controller = { enqueue: (bytes) => sent.push(new TextDecoder().decode(bytes)) };
  transformer.start(controller);
  for (const chunk of chunks) transformer.transform(chunk, controller);
  transformer.cancel();
  return { seen, sent, broken, cancelled };
}

const results = {};
const utf8 = new TextEncoder();

// A 4-byte character split across chunks, and a U+FEFF starting a chunk, both kept whole.
const rocket = utf8.encode("a🚀b\ufeffc");
results.split = run([rocket.subarray(0, 3), rocket.subarray(3, 6), rocket.subarray(6)]).seen.join("");

// A chunk over the slice size is handed over in slices, a character cut by a slice edge
// arriving whole in the next one; each slice's answer is enqueued.
const big = new Uint8Array(SLICE * 2 + 10).fill(0x61);
big.set(utf8.encode("é"), SLICE - 1);
const sliced = run([big]);
results.slices = sliced.seen.map((text) => text.length);
results.sliced_text_intact = sliced.seen.join("") === new TextDecoder().decode(big);
results.sliced_sent = sliced.sent.length;

// Once Python answers undefined (over), the rest of the chunk is not handed over.
results.stops = run([big], { overAfter: 1 }).seen.length;

// Views of other kinds are read as bytes; what is not bytes goes to onBroken.
results.views = run([new DataView(utf8.encode("dv").buffer), utf8.encode("ab").buffer]).seen.join("");
const notBytes = run(["a string"]);
results.not_bytes = [notBytes.broken, notBytes.seen.length];
results.cancelled = notBytes.cancelled;

console.log(JSON.stringify(results));
