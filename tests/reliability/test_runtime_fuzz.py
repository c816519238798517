"""Fuzzing in the real runtime: generated hostile request bodies and hostile upstream
scripts (drawing from the emulator's real upstream quirks too, docs/emulator.md, "Upstream quirks"), where Pyodide's stack and workerd's memory are the real ones (a CPython fuzzer
cannot see a stack overflow that aborts the isolate). Every case must end in a clear
answer: a JSON error before the stream, or the stream's first event (`meta`, the UI
stream's `start`) and exactly one terminal event, last. Which terminal is not checked here:
what each upstream shape should end in is the other suites' business. The harness fails a
test whose runtime printed a crash.

A bounded sample runs per CI run, the same every run (FUZZ_SEED's default); FUZZ_SEED=random
draws a new one (printed on failure, FUZZ_SEED=N replays it), and RELIABILITY_SCALE=full
draws many more from a new seed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re

import httpx
import pytest

from tests.harness.scenarios import error as upstream_error
from tests.harness.scenarios import generated, quirk, script, scripted_options, send, send_bytes, sleep
from tests.harness.scenarios import hang as upstream_hang
from tests.harness.scenarios import repeat as send_repeatedly

FULL = os.environ.get("RELIABILITY_SCALE") == "full"
# The same draws every run unless asked: FUZZ_SEED=N replays seed N, FUZZ_SEED=random draws a
# new one (printed on failure), as RELIABILITY_SCALE=full does by default.
_SEED = os.environ.get("FUZZ_SEED", "random" if FULL else "20261202")
SEED = random.SystemRandom().randrange(2**32) if _SEED == "random" else int(_SEED)
REQUEST_CASES, UPSTREAM_CASES, GENERATED_CASES = (400, 80, 20) if FULL else (36, 12, 4)
ROUTES = ("/api/chat", "/api/chat/raw", "/api/ui-chat")

pytestmark = pytest.mark.heavy


# --- hostile request bodies -----------------------------------------------------------


def _deep(rng: random.Random, depth: int) -> str:
    openers = [rng.choice(('[', '{"k":')) for _ in range(depth)]
    closers = ["]" if opener == "[" else "}" for opener in reversed(openers)]
    middle = rng.choice(("1", '"x"', "null", "[]", "{}"))
    closed = rng.random() < 0.8
    return "".join(openers) + middle + ("".join(closers) if closed else "")


def _number(rng: random.Random) -> str:
    return rng.choice((
        "9" * rng.randint(4000, 6000),
        "-" + "9" * rng.randint(4301, 5000),
        "1e400", "-1e400", "1e-400", "NaN", "Infinity", "-Infinity",
        "0." + "0" * 3000 + "1", str(2**63), "-0",
    ))


def _string(rng: random.Random) -> str:
    pieces = ["a", "\\n", "\\u0000", "\\ud800", "\\\"", "é", "😀", "\\u2028", " ", "\u00a0", "\ufeff", "\x1c", "\\\\"]
    return '"' + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5000))) + '"'


def _value(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return _deep(rng, rng.choice((64, 65, 200, 5000, 20_000)))
    if kind == 1:
        return _number(rng)
    if kind == 2:
        return _string(rng)
    return json.dumps(rng.choice((None, True, [], {}, "user", "assistant", "system", 5)))


def hostile_body(rng: random.Random) -> bytes:
    """A request body built to hurt a JSON reader: deep nesting anywhere in a chat turn,
    huge and non-finite numbers, long strings with escapes, invalid UTF-8, or a body that
    is none of these but only nearly a chat turn."""
    value = _value(rng)
    shape = rng.randrange(6)
    if shape == 0:
        text = value
    elif shape == 1:
        text = '{"messages":' + value + "}"
    elif shape == 2:
        text = '{"messages":[{"role":"user","content":' + value + "}]}"
    elif shape == 3:
        text = '{"messages":[{"role":"user","parts":[{"type":"text","text":' + value + "}]}]}"
    elif shape == 4:
        text = '{"messages":[{"role":"user","content":"hi"}],"' + rng.choice(("max_tokens", "temperature", "x")) + '":' + value + "}"
    else:
        text = '{"messages":[{"role":"user","content":"hi"}],"extra":' + value + "}"
    body = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.1:
        cut = rng.randrange(len(body) + 1)
        body = body[:cut] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80")) + body[cut:]
    return body


def check_streamed(path: str, body: bytes, where: str) -> None:
    """Exactly one terminal event, and nothing after it."""
    if path == "/api/chat/raw":
        return  # Workers AI's own stream, untouched: no terminal event of ours
    blocks = [block for block in body.decode().split("\n\n") if block and not block.startswith(":")]
    if path == "/api/ui-chat":
        kinds = [json.loads(block[6:]).get("type") if block != "data: [DONE]" else "[DONE]" for block in blocks]
        assert kinds[0] == "start", (where, kinds[:3])
        assert kinds[-1] == "[DONE]" and kinds.count("[DONE]") == 1, (where, kinds[-3:])
        assert [k for k in kinds if k in ("finish", "error")] == [kinds[-2]], (where, kinds[-3:])
        return
    names = [block.split("\n", 1)[0].removeprefix("event: ") for block in blocks]
    assert names[0] == "meta", (where, names[:3])
    assert [n for n in names if n in ("done", "error")] == [names[-1]], (where, names[-3:])


async def test_generated_hostile_request_bodies_get_clear_answers(start_runtime, http):
    runtime = start_runtime(scripted_options([send('data: {"response":"ok"}\n\n'), send("data: [DONE]\n\n")]))
    rng = random.Random(SEED)
    for case in range(REQUEST_CASES):
        path = rng.choice(ROUTES)
        body = hostile_body(rng)
        where = f"FUZZ_SEED={SEED} case {case}: {path}, {len(body)} bytes, starts {body[:60]!r}"
        response = await http.post(runtime.url + path, content=body, headers={"content-type": "application/json"})
        assert response.status_code in (200, 400, 413), where
        if response.status_code == 200:
            check_streamed(path, response.content, where)
        else:
            error = response.json()["error"]
            assert error["code"] in ("invalid_json", "invalid_request", "payload_too_large") and error["message"], where
    assert (await http.get(runtime.url + "/health")).status_code == 200


# --- hostile upstream scripts ---------------------------------------------------------


def _frame(payload: str) -> str:
    return f"data: {payload}\n\n"


JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
REPLY_QUIRKS = ("numbers", "error_midway", "finish_alias")
MODELS = ("@cf/zai-org/glm-4.7-flash", "@cf/meta/llama-3.3-70b-instruct-fp8-fast")  # OpenAI-style, native


def _lexeme(rng: random.Random) -> str:
    """A JSON number's text, huge or exact-looking ones among them."""
    if rng.random() < 0.5:
        return rng.choice(("5", "0", "-0", "0.005", "1.10", "1E+2", "6", "-12.50e-3"))
    return next(number for number in iter(lambda: _number(rng), None) if JSON_NUMBER.fullmatch(number))


def _text(rng: random.Random, longest: int = 200_000) -> str:
    return rng.choice(("", "t", " ", "\u2028", "\ud800", "é😀", "data: [DONE]\n\n", "\ufeff", "x" * rng.choice((10, longest))))


def hostile_quirk(rng: random.Random) -> dict:
    """One of the emulator's real upstream shapes, with hostile fields."""
    name = rng.choice(("error_object", "error_body", "finish", "number_content", "number_reasoning", "number_response",
                       "content_parts", "content_value", "text_field", "reasoning_pair", "tool_arguments_number", "bom_line"))
    if name in ("error_object", "error_body"):
        return quirk(name, message=_text(rng), code=rng.choice((500, 400, 429, 3040, "x")), type=_text(rng))
    if name == "finish":
        return quirk(name, reason=rng.choice(("error", "max_tokens", "eos", "end_turn", "content_filter", "length", "stop", "")))
    if name in ("number_content", "number_response"):
        return quirk(name, lexeme=_lexeme(rng))
    if name == "number_reasoning":
        return quirk(name, lexeme=_lexeme(rng), field=rng.choice(("reasoning_content", "reasoning")))
    if name == "content_parts":
        return quirk(name, texts=[_text(rng, 100) for _ in range(rng.choice((0, 1, 3, 1000)))])
    if name == "content_value":
        return quirk(name, json=rng.choice(("true", "false", "null", '{"a":1}', "[1,2]", '{"type":"text","text":"x"}',
                                            '[{"type":"image"}]', "[" * 1000 + "]" * 1000, _lexeme(rng))))
    if name == "text_field":
        return quirk(name, where=rng.choice(("delta.text", "text", "message.content")), text=_text(rng))
    if name == "reasoning_pair":
        return quirk(name, reasoning_content=rng.choice(("", _text(rng))), reasoning=rng.choice(("", _text(rng))))
    if name == "tool_arguments_number":
        return quirk(name, lexeme=_lexeme(rng), id=rng.choice(("chatcmpl-tool-1", _text(rng))), name=rng.choice(("f", _text(rng))))
    return quirk(name, text=_text(rng))


def hostile_step(rng: random.Random) -> dict:
    kind = rng.randrange(16)
    if kind >= 12:
        return hostile_quirk(rng)
    if kind == 0:
        return send(_frame('{"response":"d","x":' + _deep(rng, rng.choice((65, 1000, 10_000))) + "}"))
    if kind == 1:
        return send(_frame('{"response":' + _number(rng) + "}"))
    if kind == 2:  # many data lines and no blank line
        return send_repeatedly(rng.choice((10, 1000, 100_000)), "data: " + "y" * rng.randint(0, 40) + "\n")
    if kind == 3:
        return send(_frame('{"response":"","finish_reason":"' + "f" * rng.choice((10, 200_000)) + '"}'))
    if kind == 4:
        return send(_frame('{"response":"","usage":{"prompt_tokens":' + _number(rng) + ',"completion_tokens":1,"total_tokens":1}}'))
    if kind == 5:
        return send(_frame(json.dumps({"response": "z" * rng.choice((1000, 200_000))})))
    if kind == 6:
        return send_repeatedly(rng.choice((10, 1000)), rng.choice((": ping\n", "\n", "\r", "event: x\n", "id: 1\n", "retry: 9\n")))
    if kind == 7:
        return send_bytes(rng.choice((b"data: {\"response\":\"\xff\xfe\"}\n\n", b"\xef\xbb\xbfdata: x\r\r", b"data: \xe6\x97")))
    if kind == 8:  # one long line that never ends
        return send_repeatedly(rng.choice((10, 2000)), "x" * 1024)
    if kind == 9:
        return send(_frame('{"choices":[{"delta":{"content":"c","tool_calls":' + _deep(rng, 70) + "}}]}"))
    if kind == 10:
        return sleep(rng.choice((0, 50, 300)))
    return send(_frame(json.dumps({"response": rng.choice(("t", " ", "\u2028", "\ud800"))})))


def hostile_script(rng: random.Random) -> dict:
    steps = [hostile_step(rng) for _ in range(rng.randint(1, 6))]
    ending = rng.randrange(7)
    if ending == 0:
        steps.append(send("data: [DONE]\n\n"))
    elif ending == 1:
        steps.append(upstream_error("fuzzed provider failure"))
    elif ending == 2:
        steps.append(upstream_hang())
    elif ending == 3:
        steps += [send("data: [DONE]\n\n"), upstream_hang()]
    elif ending == 5:  # vLLM's failed generation
        steps += [quirk("error_object"), send("data: [DONE]\n\n")]
    elif ending == 6:
        steps += [hostile_quirk(rng), send("data: [DONE]\n\n")]
    return script(steps)  # ending 4: the stream just closes


def quirky_reply(rng: random.Random) -> tuple[dict, dict]:
    """A generated reply with some of the emulator's reply quirks, and the request fields
    (a model of either framing, a token budget) that shape it."""
    quirks = rng.sample(REPLY_QUIRKS, rng.randint(1, len(REPLY_QUIRKS)))
    fields = {"model": rng.choice(MODELS), "max_tokens": rng.choice((1, 2, 9, 40, 400))}
    return generated(quirks), fields


UPSTREAM_SCRIPTS = {f"fuzz {n}": hostile_script(random.Random(SEED + n)) for n in range(UPSTREAM_CASES)}
QUIRKY_REPLIES = {f"fuzz quirky reply {n}": quirky_reply(random.Random(SEED - 1 - n)) for n in range(GENERATED_CASES)}
REQUEST_FIELDS = {prompt: fields for prompt, (_, fields) in QUIRKY_REPLIES.items()}
FUZZED_UPSTREAMS = dataclasses.replace(
    scripted_options(
        prompts={**UPSTREAM_SCRIPTS, **{prompt: reply for prompt, (reply, _) in QUIRKY_REPLIES.items()}},
        variables={"IDLE_TIMEOUT_MS": "1500", "PING_INTERVAL_MS": "500", "FALLBACK_MODELS": MODELS[1]},
    ),
    ai_format=None,  # generated replies in each model's own framing
    ai_pace=0.0,
)


@pytest.mark.parametrize("prompt", [*UPSTREAM_SCRIPTS, *QUIRKY_REPLIES])
async def test_generated_hostile_upstreams_end_with_exactly_one_terminal_event(start_runtime, prompt):
    runtime = start_runtime(FUZZED_UPSTREAMS)
    upstream = UPSTREAM_SCRIPTS.get(prompt) or QUIRKY_REPLIES[prompt]
    where = f"FUZZ_SEED={SEED} {prompt}: {json.dumps(upstream)[:300]}"
    fields = REQUEST_FIELDS.get(prompt, {})
    async with httpx.AsyncClient(timeout=60) as client:
        turns = {
            "/api/chat": {"messages": [{"role": "user", "content": prompt}], **fields},
            "/api/ui-chat": {"messages": [{"role": "user", "parts": [{"type": "text", "text": prompt}]}], **fields},
        }
        for path, turn in turns.items():
            response = await client.post(runtime.url + path, json=turn)
            assert response.status_code == 200, where
            check_streamed(path, response.content, where)
        assert (await client.get(runtime.url + "/health")).status_code == 200, where
