// src/chat/stream/relay.mjs with JS stand-ins for the Python callbacks, in Node's web
// streams: the plumbing's own rules (slicing, decoding across chunks, ending when Python
// says a text is the last, the timer, the pipe's end, the client leaving). What crosses
// into Python is tested in the runtime (tests/runtime).
import { last, relay } from "../../src/chat/stream/relay.mjs";

const SLICE = 64 * 1024;
const utf8 = new TextEncoder();

// An upstream of `chunks` that records whether it was cancelled; `fail` errors it after.
function upstream(chunks, { fail = false, hold = false } = {}) {
  const state = { cancelled: false };
  let at = 0;
  state.stream = new ReadableStream({
    pull(controller) {
      if (at < chunks.length) controller.enqueue(chunks[at++]);
      else if (fail) controller.error(new Error("boom"));
      else if (!hold) controller.close();
      else return new Promise(() => {});  // never more: a model still thinking
    },
    cancel() {
      state.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return state;
}

// Stand-ins: onText answers the text upper-cased, or last(...) after `lastAfter` texts.
function callbacks({ lastAfter = Infinity, ticks = [], delay = 60_000 } = {}) {
  const calls = { seen: [], broken: null, ended: [], left: 0, ticks: 0, after: [] };
  let finished = false;
  const note = (name) => { if (finished) calls.after.push(name); };
  const fns = [
    () => { note("start"); return "<meta>"; },
    (text) => { note("text"); calls.seen.push(text); return calls.seen.length > lastAfter ? last("<last>") : text.toUpperCase(); },
    (behind) => { note("tick"); calls.ticks += 1; const out = ticks.shift(); return out === undefined ? "" : out; },
    (name) => { note("broken"); calls.broken = name; return last("<broken>"); },
    (failed) => { note("ended"); calls.ended.push(failed); finished = true; return "<end>"; },
    () => { note("delay"); return delay; },
    () => { note("left"); calls.left += 1; },
  ];
  return { calls, fns };
}

async function readAll(readable) {
  const parts = [];
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });  // keeps a chunk's leading U+FEFF
  for await (const bytes of readable) parts.push(decoder.decode(bytes, { stream: true }));
  return parts.join("");
}

async function run(chunks, options = {}) {
  const source = upstream(chunks, options);
  const { calls, fns } = callbacks(options);
  const handle = relay(source.stream, SLICE, ...fns);
  const body = await readAll(handle.readable);
  await handle.settled;
  return { body, calls, cancelled: source.cancelled };
}

const results = {};

// A 4-byte character split across chunks, and a U+FEFF starting a chunk, both kept whole;
// the end's text follows the texts.
const rocket = utf8.encode("a🚀b\ufeffc");
const split = await run([rocket.subarray(0, 3), rocket.subarray(3, 6), rocket.subarray(6)]);
results.split = split.calls.seen.join("");
results.split_body = split.body;
results.split_ended = split.calls.ended;

// A chunk over the slice size is handed over in slices, a character cut by a slice edge
// arriving whole in the next one.
const big = new Uint8Array(SLICE * 2 + 10).fill(0x61);
big.set(utf8.encode("é"), SLICE - 1);
const sliced = await run([big]);
results.slices = sliced.calls.seen.map((text) => text.length);
results.sliced_text_intact = sliced.calls.seen.join("") === new TextDecoder().decode(big);

// After last(...), nothing more is handed over, the end's text is not sent, the
// upstream is cancelled, and onEnded still answers once.
const stopped = await run([big, utf8.encode("more")], { lastAfter: 1, hold: true });
results.stops = [stopped.calls.seen.length, stopped.body.endsWith("<last>"), stopped.cancelled, stopped.calls.ended];

// An upstream that errors: onEnded(true), and its text is sent.
const failed = await run([utf8.encode("x")], { fail: true });
results.failed = [failed.calls.ended, failed.body];

// Views of other kinds are read as bytes; what is not bytes ends the stream via onBroken.
results.views = (await run([new DataView(utf8.encode("dv").buffer), utf8.encode("ab").buffer])).calls.seen.join("");
const notBytes = await run(["a string", utf8.encode("later")], { hold: true });
results.not_bytes = [notBytes.calls.broken, notBytes.calls.seen.length, notBytes.body, notBytes.cancelled];

// The timer: onTick at onDelay's milliseconds until a tick answers last(...).
const ticked = await run([], { hold: true, delay: 5, ticks: ["<ping>", "", last("<timeout>")] });
results.ticks = [ticked.calls.ticks, ticked.body, ticked.cancelled];

// end(text): an ending Python decides on its own (a stop).
{
  const source = upstream([utf8.encode("x")], { hold: true });
  const { calls, fns } = callbacks();
  const handle = relay(source.stream, SLICE, ...fns);
  const reader = handle.readable.getReader();
  const first = await reader.read();
  handle.end("<stopped>");
  handle.end("<twice>");
  const parts = [new TextDecoder().decode(first.value)];
  for (let step = await reader.read(); !step.done; step = await reader.read()) parts.push(new TextDecoder().decode(step.value));
  await handle.settled;
  results.end = [parts.join(""), source.cancelled, calls.ended.length];
}

// The client leaves: onLeft once, the upstream is cancelled, nothing is called after onEnded.
{
  const source = upstream([utf8.encode("x")], { hold: true });
  const { calls, fns } = callbacks({ delay: 5 });
  const handle = relay(source.stream, SLICE, ...fns);
  const reader = handle.readable.getReader();
  await reader.read();
  await reader.cancel();
  await handle.settled;
  await new Promise((resolve) => setTimeout(resolve, 30));  // a tick would have come by now
  results.left = [calls.left, source.cancelled, calls.ended.length, calls.after];
}

// A callback that throws (a bug in Python) ends the stream at once, without a terminal
// event and never a hang: the upstream is cancelled, onEnded still answers once (unless it
// is what threw) and `settled` rejects with the error. One case per callback.
results.throws = {};
for (const [index, name] of [[0, "start"], [1, "text"], [2, "tick"], [3, "broken"], [4, "ended"], [5, "delay"]]) {
  const source = upstream(name === "broken" ? ["a string"] : [utf8.encode("x")], { hold: name !== "ended" });
  const { calls, fns } = callbacks({ delay: 5 });
  fns[index] = () => { throw new Error(`bug in ${name}`); };
  const handle = relay(source.stream, SLICE, ...fns);
  const body = await Promise.race([readAll(handle.readable), new Promise((resolve) => setTimeout(() => resolve("<hang>"), 2000))]);
  const error = await handle.settled.then(() => null, (reason) => reason.message);
  results.throws[name] = [body, source.cancelled, calls.ended.length, error];
}

console.log(JSON.stringify(results));
