// Scripted upstreams: a test script's steps as network chunks (docs/emulator.md,
// "Scripted upstreams").

import { base64Bytes, contentText, encoder, sleep } from "./common.js";
import { quirkText } from "./quirks.js";
import { sseFrame } from "./framings.js";

// The last user message's text (contentText): what `prompts` scripts are keyed by and
// `echo` sends, so an image turn's text parts script it.
export function lastUserContent(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i] && messages[i].role === "user") return contentText(messages[i].content);
  }
  return "";
}

// The conversation the model was sent, one `role: text` line a message (a call's name for
// its text, when it has none): a `transcript` step sends it, so a test can see the history
// the Worker rebuilt (a stored response's, continued by previous_response_id).
function transcript(messages) {
  return messages.map((message) => {
    const calls = (message?.tool_calls ?? []).map((call) => `call ${call?.function?.name}`).join(", ");
    return `${message?.role}: ${contentText(message?.content) || calls}`;
  }).join("\n");
}

class ScriptedStreamError extends Error {}

// A `held` step waits until the test releases it: the address AI_SCRIPT_URL + "/released/"
// + name answers 200 once it has (tests/harness/pool.py), so an answer is still being
// written when the test acts, however slow the machine, instead of hoping it is slow enough.
async function untilReleased(env, name) {
  if (!env.AI_SCRIPT_URL) throw new Error("a held step needs AI_SCRIPT_URL (the test harness)");
  const address = `${env.AI_SCRIPT_URL}/released/${encodeURIComponent(name)}`;
  while ((await fetch(address)).status !== 200) await sleep(25);
}

export async function* scriptedChunks(inputs, script, model, env) {
  for (const step of script.steps ?? []) {
    if (step.quirk !== undefined) yield encoder.encode(quirkText(step, model));
    else if (step.sleep_ms !== undefined) await sleep(step.sleep_ms);
    else if (step.send_b64 !== undefined) yield base64Bytes(step.send_b64);
    else if (step.repeat !== undefined) for (let i = 0; i < step.repeat; i++) yield encoder.encode(step.send);
    else if (step.send !== undefined) yield encoder.encode(step.send);
    else if (step.echo) yield sseFrame({ response: lastUserContent(inputs.messages ?? []), p: "" });
    else if (step.transcript) yield sseFrame({ response: transcript(inputs.messages ?? []), p: "" });
    else if (step.error !== undefined) throw new ScriptedStreamError(step.error);
    else if (step.held !== undefined) await untilReleased(env, step.held);
    else if (step.hang) for (;;) await sleep(60_000); // a timer stays pending: workerd would cancel a bare never-resolving promise
    else throw new Error(`unknown script step: ${JSON.stringify(step)}`);
  }
}
