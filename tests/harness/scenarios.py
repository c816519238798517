"""Scripts for the Workers AI emulator (docs/emulator.md, "Scripted upstreams"), and the runtime
options that replay them: the one vocabulary every runtime test builds its upstreams with.

    scripted_options([native_frame("Hel"), sleep(100), native_frame("lo"), usage_frame(5, 2), done_frame()],
                     variables={"IDLE_TIMEOUT_MS": "800"})

Each `send` step is one network chunk; the emulator sends the text exactly as given.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from tests.harness.runtime import RuntimeOptions

Step = dict[str, Any]
Script = dict[str, Any]

# Workers AI pads its frames with a field of random length; the Worker ignores it.
PADDING = "pad"

# --- what the upstream sends ----------------------------------------------------------


def send(text: str) -> Step:
    """Text sent as UTF-8, exactly as given."""
    return {"send": text}


def send_bytes(raw: bytes) -> Step:
    """Bytes sent as they are, valid UTF-8 or not."""
    return {"send_b64": base64.b64encode(raw).decode()}


def repeat(times: int, text: str) -> Step:
    """Text sent `times` times, one chunk each."""
    return {"repeat": times, "send": text}


def native_frame(text: str) -> Step:
    """A Workers AI frame carrying `text`."""
    return send("data: " + json.dumps({"response": text, "p": PADDING}) + "\n\n")


def openai_chunk(content: str | None = None, finish_reason: str | None = None) -> Step:
    """An OpenAI-style `chat.completion.chunk` frame: text in its delta, or none with the
    finish reason of the last chunk."""
    delta = {} if content is None else {"content": content}
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
    return send("data: " + json.dumps(chunk) + "\n\n")


def workers_ai_chunk(completion_tokens: int, *, content: str | None = None, reasoning: str | None = None,
                     reasoning_field: str = "reasoning_content", finish_reason: str | None = None) -> Step:
    """A chunk as Workers AI streams it for most current models (2026): compact, with id,
    created and model, running usage on every chunk, finish_reason only on the usage chunk."""
    delta = {reasoning_field: reasoning} if reasoning is not None else {"content": content or ""}
    usage = {"prompt_tokens": 9, "completion_tokens": completion_tokens, "total_tokens": 9 + completion_tokens,
             "prompt_tokens_details": {"cached_tokens": 0}}
    chunk = {"id": "chatcmpl-9f", "object": "chat.completion.chunk", "created": 1764000000, "model": "@cf/zai-org/glm-4.7-flash",
             "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}], "usage": usage}
    return send("data: " + json.dumps(chunk, ensure_ascii=False, separators=(",", ":")) + "\n\n")


def usage_frame(prompt_tokens: int, completion_tokens: int) -> Step:
    """Workers AI's frame after the text: an empty response and the token counts."""
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}
    return send("data: " + json.dumps({"response": "", "usage": usage}, separators=(",", ":")) + "\n\n")


def done_frame() -> Step:
    """The `[DONE]` frame that ends a complete Workers AI stream."""
    return send("data: [DONE]\n\n")


def echo() -> Step:
    """A Workers AI frame carrying the last user message."""
    return {"echo": True}


def transcript() -> Step:
    """A Workers AI frame carrying the conversation the model was sent: one `role: text`
    line a message (`call <name>` for an assistant's calls without text)."""
    return {"transcript": True}


def quirk(name: str, /, **fields: Any) -> Step:
    """One chunk in a shape a real upstream sends (ai_emulator/quirks.js QUIRK_STEPS names
    each one's source). OpenAI-style chunks are framed as Workers AI's, compact:
    `{"id":"chatcmpl-quirk","object":"chat.completion.chunk","created":1764000000,"model":<the
    model called>,"choices":[{"index":0,<the choice>,"logprobs":null,"finish_reason":null}]}`.
    Numbers are lexeme strings (`lexeme="1.10"`), written into the JSON text raw. `name` is
    positional only, so that a field can be called `name` too.

    - `error_object` (message="generation failed", code=500, type="InternalServerError"):
      `data: {"error":{"message":…,"type":…,"param":null,"code":…}}` (vLLM); add `[DONE]` yourself
    - `error_body` (same fields): `data: {"object":"error","message":…,"type":…,"param":null,"code":…}`
    - `finish` (reason): a chunk with an empty delta and that finish_reason
    - `number_content` (lexeme): `delta.content` as that raw JSON number
    - `number_reasoning` (lexeme, field="reasoning_content" or "reasoning"): reasoning as one
    - `number_response` (lexeme): the native frame `data: {"response":<lexeme>}`
    - `content_parts` (texts): `delta.content` as `[{"type":"text","text":…}, …]`
    - `content_value` (json): `delta.content` as that raw JSON text ("true", '{"a":1}', "[1,2]")
    - `text_field` (where="delta.text", "text" or "message.content", text): the text there
      instead of in `delta.content`
    - `reasoning_pair` (reasoning_content, reasoning): one delta carrying both
    - `tool_arguments_number` (lexeme, id="chatcmpl-tool-0123456789abcdef", name="get_weather",
      index=0): a tool call's first entry, whose `function.arguments` is a raw JSON number
    - `bom_line` (text): U+FEFF, then `data: {"response":<text>}`

    Each frame ends with a blank line. An unknown name, or a field of the wrong type, errors
    the stream as an unknown step does.
    """
    return {"quirk": name, **fields}


# --- how the upstream behaves ---------------------------------------------------------


def sleep(ms: int) -> Step:
    return {"sleep_ms": ms}


def error(message: str) -> Step:
    """The stream errors with `message`, a provider detail no client may see."""
    return {"error": message}


def held(name: str) -> Step:
    """Nothing more is sent until the test releases `name` (`ScriptServer.release`, or a POST
    to the runtime's script URL + "/released/" + name): for an answer that must still be
    streaming when the test acts. Pooled runtimes only; use a name no other test uses."""
    return {"held": name}


def hang() -> Step:
    """Nothing more is sent and the stream never closes."""
    return {"hang": True}


# --- scripts, and runtimes that replay them -------------------------------------------


def script(steps: Sequence[Step] = (), *, fail_start: str | None = None, start_delay_ms: int | None = None,
           busy_ms: int | None = None) -> Script:
    """A script: `run()` waits `start_delay_ms`, then rejects with `fail_start` or streams
    the steps, closing the stream when they run out. `busy_ms`: the model is busy, so a
    call with `rejectIfBusy` fails at once with 3040 and any other waits that long first."""
    built: Script = {"steps": list(steps)}
    if busy_ms is not None:
        built["busy_ms"] = busy_ms
    if fail_start is not None:
        built["fail_start"] = fail_start
    if start_delay_ms is not None:
        built["start_delay_ms"] = start_delay_ms
    return built


def generated(quirks: Sequence[str] | None = None) -> Script:
    """A script answered with the emulator's generated reply, as if unscripted (for one
    prompt or model of a script), carrying these quirks of ai_emulator/quirks.js
    REPLY_QUIRKS ("numbers", "error_midway", "finish_alias"); None: AI_QUIRKS' (the
    runtime's RuntimeOptions.ai_quirks)."""
    built: Script = {"generate": True}
    if quirks is not None:
        built["quirks"] = list(quirks)
    return built


def scripted_options(
    steps: Sequence[Step] = (),
    *,
    fail_start: str | None = None,
    start_delay_ms: int | None = None,
    prompts: Mapping[str, Script] | None = None,
    models: Mapping[str, Script] | None = None,
    variables: Mapping[str, str] | None = None,
    rate_limit: int | None = None,
) -> RuntimeOptions:
    """Options for a runtime whose emulator replays this script on every call, or the
    script of `models[model]` or else of `prompts[last user message]` when there is one.
    `variables` override [vars] of wrangler.toml; `rate_limit` sets the limiter's limit
    (RuntimeOptions.rate_limit: left out, the harness's limit no suite reaches)."""
    top = script(steps, fail_start=fail_start, start_delay_ms=start_delay_ms)
    if prompts is not None:
        top["prompts"] = dict(prompts)
    if models is not None:
        top["models"] = dict(models)
    extra = {} if rate_limit is None else {"rate_limit": rate_limit}
    return RuntimeOptions(ai_script=json.dumps(top), variables=tuple(sorted((variables or {}).items())), **extra)
