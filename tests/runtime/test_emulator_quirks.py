"""The emulator's upstream quirks (issue 27; docs/emulator.md, "Upstream quirks"), read as bytes through
`/api/chat/raw`, which passes the model's stream through untouched: each `quirk` script step
sends exactly its real shape's wire text, and generated replies carry AI_QUIRKS. One runtime
serves every case: each scenario is the script of its prompt (the last user message)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import httpx
import pytest

from devtools.dev import AI_QUIRKS as LAUNCHER_QUIRKS
from tests.harness.client import chat
from tests.harness.scenarios import done_frame, generated, native_frame, quirk, scripted_options

MODEL = "@cf/zai-org/glm-4.7-flash"  # wrangler.toml's MODEL: OpenAI-style chunks
NATIVE_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # native frames
DONE = b"data: [DONE]\n\n"
ERROR_FRAME = 'data: {"error":{"message":"generation failed","type":"InternalServerError","param":null,"code":500}}\n\n'


def chunk(choice: str, finish_reason: str = "null") -> str:
    """The frame of a quirk in Workers AI's OpenAI-style chunk, `choice` being the choice's
    members between its index and its logprobs."""
    return ('data: {"id":"chatcmpl-quirk","object":"chat.completion.chunk","created":1764000000,'
            f'"model":"{MODEL}","choices":[{{"index":0,{choice},"logprobs":null,"finish_reason":{finish_reason}}}]}}\n\n')


# name -> (the quirk step, the exact text it sends)
QUIRKS: dict[str, tuple[dict, str]] = {
    "error_object": (quirk("error_object"), ERROR_FRAME),
    "error_object, given fields": (
        quirk("error_object", message='Überlastet "now"', code=503, type="ServiceUnavailableError"),
        'data: {"error":{"message":"Überlastet \\"now\\"","type":"ServiceUnavailableError","param":null,"code":503}}\n\n',
    ),
    "error_object, a code that is a string": (
        quirk("error_object", code="rate_limited"),
        'data: {"error":{"message":"generation failed","type":"InternalServerError","param":null,"code":"rate_limited"}}\n\n',
    ),
    "error_body": (
        quirk("error_body"),
        'data: {"object":"error","message":"generation failed","type":"InternalServerError","param":null,"code":500}\n\n',
    ),
    "error_body, given fields": (
        quirk("error_body", message="bad", code=400, type="BadRequestError"),
        'data: {"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}\n\n',
    ),
    **{
        f"finish {reason}": (quirk("finish", reason=reason), chunk('"delta":{}', f'"{reason}"'))
        for reason in ("error", "max_tokens", "eos", "end_turn", "content_filter", "length")
    },
    **{
        f"number_content {lexeme}": (quirk("number_content", lexeme=lexeme), chunk(f'"delta":{{"content":{lexeme}}}'))
        for lexeme in ("5", "0.005", "1.10", "1e400", "-0", "1E+2", "9" * 400)
    },
    "number_reasoning": (quirk("number_reasoning", lexeme="1.10"), chunk('"delta":{"reasoning_content":1.10}')),
    "number_reasoning, in reasoning": (
        quirk("number_reasoning", lexeme="5", field="reasoning"), chunk('"delta":{"reasoning":5}'),
    ),
    **{
        f"number_response {lexeme}": (quirk("number_response", lexeme=lexeme), f'data: {{"response":{lexeme}}}\n\n')
        for lexeme in ("12", "1.10", "1e400", "-0")
    },
    "content_parts": (
        quirk("content_parts", texts=["Hel", "lo ", "东京"]),
        chunk('"delta":{"content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo "},{"type":"text","text":"东京"}]}'),
    ),
    "content_parts, none": (quirk("content_parts", texts=[]), chunk('"delta":{"content":[]}')),
    **{
        f"content_value {value}": (quirk("content_value", json=value), chunk(f'"delta":{{"content":{value}}}'))
        for value in ("true", "false", '{"a":1}', "[1,2]", '{"text":"x"}', "null", '"$&"')
    },
    "text_field delta.text": (quirk("text_field", where="delta.text", text="Hi"), chunk('"delta":{"text":"Hi"}')),
    "text_field text": (quirk("text_field", where="text", text="Hi"), chunk('"text":"Hi"')),
    "text_field message.content": (
        quirk("text_field", where="message.content", text="Hi"), chunk('"message":{"content":"Hi"}'),
    ),
    "reasoning_pair, reasoning_content empty": (
        quirk("reasoning_pair", reasoning_content="", reasoning="thinking"),
        chunk('"delta":{"reasoning_content":"","reasoning":"thinking"}'),
    ),
    "reasoning_pair, reasoning empty": (
        quirk("reasoning_pair", reasoning_content="thinking", reasoning=""),
        chunk('"delta":{"reasoning_content":"thinking","reasoning":""}'),
    ),
    "tool_arguments_number": (
        quirk("tool_arguments_number", lexeme="1.10", id="chatcmpl-tool-00000000deadbeef", name="get_price"),
        chunk('"delta":{"tool_calls":[{"index":0,"id":"chatcmpl-tool-00000000deadbeef","type":"function",'
              '"function":{"name":"get_price","arguments":1.10}}]}'),
    ),
    "tool_arguments_number, defaults": (
        quirk("tool_arguments_number", lexeme="7"),
        chunk('"delta":{"tool_calls":[{"index":0,"id":"chatcmpl-tool-0123456789abcdef","type":"function",'
              '"function":{"name":"get_weather","arguments":7}}]}'),
    ),
    "bom_line": (quirk("bom_line", text="café"), '\ufeffdata: {"response":"café"}\n\n'),
}
# Steps the emulator refuses: the stream errors there, as at an unknown step.
REFUSED = {
    "an unknown quirk": quirk("no_such_quirk"),
    "a lexeme that is a JS number": quirk("number_content", lexeme=5),
    "a lexeme that is no JSON number": quirk("number_content", lexeme="1.1.1"),
    "NaN as a lexeme": quirk("number_response", lexeme="NaN"),
    "content_value that is no JSON": quirk("content_value", json="{"),
    "text_field elsewhere": quirk("text_field", where="delta.body", text="x"),
}
GENERATED = {
    "generated with AI_QUIRKS": generated(),
    "generated with numbers": generated(["numbers"]),
    "generated with finish_alias": generated(["finish_alias"]),
    "generated with no quirks": generated([]),
}
BOM_AFTER_A_FRAME = [native_frame("a"), QUIRKS["bom_line"][0], done_frame()]
AI_QUIRKS = "numbers,error_midway,finish_alias"
QUIRKY = dataclasses.replace(
    scripted_options(
        prompts={
            **{name: {"steps": [step, done_frame()]} for name, (step, _) in QUIRKS.items()},
            **{name: {"steps": [native_frame("a"), step, done_frame()]} for name, step in REFUSED.items()},
            "a BOM after a frame": {"steps": BOM_AFTER_A_FRAME},
            **GENERATED,
        },
        variables={"FALLBACK_MODELS": NATIVE_MODEL},
    ),
    ai_format=None,  # each model in its own framing
    ai_pace=0.0,
    ai_quirks=AI_QUIRKS,
)


async def raw(http: httpx.AsyncClient, url: str, prompt: str, **fields: object) -> bytes:
    response = await http.post(url + "/api/chat/raw", json={"messages": [{"role": "user", "content": prompt}], **fields})
    assert response.status_code == 200, response.text
    return response.content


def frames(body: bytes) -> list[str]:
    """The body's events, each without its blank line."""
    events = body.decode().split("\n\n")
    assert events[-1] == "", body[-200:]
    return events[:-1]


@pytest.mark.parametrize("name", list(QUIRKS))
async def test_each_quirk_step_sends_exactly_its_shapes_wire_text(start_runtime, http, name):
    runtime = start_runtime(QUIRKY)
    _, expected = QUIRKS[name]
    assert await raw(http, runtime.url, name) == expected.encode() + DONE


async def test_a_bom_line_puts_the_byte_order_mark_before_a_later_data_line(start_runtime, http):
    runtime = start_runtime(QUIRKY)
    body = await raw(http, runtime.url, "a BOM after a frame")
    assert body == b'data: {"response": "a", "p": "pad"}\n\n' + b'\xef\xbb\xbfdata: {"response":"caf\xc3\xa9"}\n\n' + DONE


@pytest.mark.expected_errors("script step")
@pytest.mark.parametrize("name", list(REFUSED))
async def test_a_quirk_step_the_emulator_cannot_send_errors_the_stream_there(start_runtime, http, name):
    runtime = start_runtime(QUIRKY)
    mark = len(runtime.lines)
    result = await chat(http, runtime.url, {"messages": [{"role": "user", "content": name}]})
    assert result.text == "a"
    assert result.terminal.name == "error", result.names
    runtime.wait_for_record("ai_upstream_errored", since=mark)
    # The emulator's throw is reported as uncaught just after: this test's, so waited for.
    runtime.wait_for_line("script step", since=mark)


def content_values(events: list[str]) -> list[str]:
    """The raw JSON text of each OpenAI-style chunk's delta.content, the role chunk's left out."""
    found = (re.search(r'"delta":\{"content":(.*?)\},"logprobs"', event) for event in events)
    return [match.group(1) for match in found if match]


def response_values(events: list[str]) -> list[str]:
    """The raw JSON text of each native text frame's response (the usage frame left out)."""
    found = (re.fullmatch(r'data: \{"response":(.*),"p":"[a-z]*"\}', event) for event in events)
    return [match.group(1) for match in found if match]


NUMBER_FRAGMENT = ['"It costs "', "0.005", '" dollars, about "', "1.10", '" euros ["', "1", '"]. "']


async def test_ai_quirks_reach_generated_openai_style_replies(start_runtime, http):
    runtime = start_runtime(QUIRKY)
    mark = len(runtime.lines)
    events = frames(await raw(http, runtime.url, "generated with AI_QUIRKS", max_tokens=40))
    record = runtime.wait_for_record("ai_run", since=mark)
    assert record["quirks"] == AI_QUIRKS.split(",") and record["scripted"] is False and record["format"] == "openai"
    # numbers: the reply opens with a fragment whose numbers are raw JSON numbers
    values = content_values(events)
    assert values[:7] == NUMBER_FRAGMENT
    # error_midway: half the answer's tokens (the budget less the reasoning), then vLLM's
    # error frame and [DONE], and no finish_reason anywhere
    reasoning = sum('"reasoning_content":' in event for event in events)
    assert len(values) == (40 - reasoning) // 2
    assert events[-2:] == [ERROR_FRAME.removesuffix("\n\n"), "data: [DONE]"]
    assert all('"finish_reason":null' in event for event in events[:-2])


async def test_ai_quirks_reach_generated_native_replies(start_runtime, http):
    runtime = start_runtime(QUIRKY)
    events = frames(await raw(http, runtime.url, "generated with AI_QUIRKS", model=NATIVE_MODEL, max_tokens=40))
    values = response_values(events)
    assert values[:7] == NUMBER_FRAGMENT
    assert len(values) == 20 == len(events) - 2  # half of max_tokens, then the error in place of the usage frame
    assert events[-2:] == [ERROR_FRAME.removesuffix("\n\n"), "data: [DONE]"]


async def test_numbers_alone_send_the_fragments_numbers_raw_and_end_the_reply_as_usual(start_runtime, http):
    runtime = start_runtime(QUIRKY)
    for fields, values_of in (({}, content_values), ({"model": NATIVE_MODEL}, response_values)):
        events = frames(await raw(http, runtime.url, "generated with numbers", max_tokens=60, **fields))
        plain = frames(await raw(http, runtime.url, "generated with no quirks", max_tokens=60, **fields))
        assert values_of(events)[:7] == NUMBER_FRAGMENT and values_of(plain)[:7] != NUMBER_FRAGMENT, fields
        for body in (events, plain):  # the usage of the whole budget, then [DONE]
            assert json.loads(body[-2][6:])["usage"]["completion_tokens"] == 60 and body[-1] == "data: [DONE]", fields


@pytest.mark.parametrize(("max_tokens", "plain", "alias"), [(30, "length", "max_tokens"), (1024, "stop", "eos")])
async def test_finish_alias_spells_the_last_chunks_finish_reason_another_way(start_runtime, http, max_tokens, plain, alias):
    runtime = start_runtime(QUIRKY)
    for prompt, reason in (("generated with finish_alias", alias), ("generated with no quirks", plain)):
        events = frames(await raw(http, runtime.url, prompt, max_tokens=max_tokens))
        finishes = [json.loads(event[6:])["choices"][0]["finish_reason"] for event in events[:-2]]
        assert finishes[-1] == reason and set(finishes[:-1]) == {None}, prompt
        assert json.loads(events[-2][6:])["choices"] == [] and events[-1] == "data: [DONE]", prompt


EMULATOR = (Path(__file__).resolve().parents[2] / "ai_emulator" / "quirks.js").read_text(encoding="utf-8")  # REPLY_QUIRKS, QUIRK_STEPS


def test_the_launcher_and_the_emulator_know_the_same_reply_quirks():
    listed = re.search(r"^const REPLY_QUIRKS = \[(.*)\];$", EMULATOR, re.MULTILINE)
    assert listed is not None
    assert tuple(json.loads(f"[{listed.group(1)}]")) == LAUNCHER_QUIRKS


def test_every_quirk_step_is_tested_here_and_has_its_source_in_a_comment_above_it():
    table = EMULATOR[EMULATOR.index("const QUIRK_STEPS = {"):]
    lines = table[:table.index("\n};\n")].splitlines()
    names = {match.group(1): index for index, line in enumerate(lines) if (match := re.match(r"  (\w+): ", line))}
    assert set(names) == {step["quirk"] for step, _ in QUIRKS.values()}
    for name, index in names.items():
        assert lines[index - 1].startswith("  //"), name
