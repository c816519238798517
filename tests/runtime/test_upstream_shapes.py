"""Every upstream shape of issue 27 on every surface, in the real runtime: a failure the
upstream reports in the stream is a failure everywhere, no text is dropped (numbers and
content parts are text), a cut or gapped answer says so, and `stop` never reorders text.
The shapes come from the emulator's quirk steps (ai_emulator/quirks.js names each one's
source). One runtime serves them all, each shape chosen by the last user message."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import openai
import pytest
from openai import AsyncOpenAI

from tests.harness.client import chat
from tests.harness.runtime import LocalRuntime
from tests.harness.scenarios import done_frame, native_frame, quirk, script, scripted_options, send, usage_frame, workers_ai_chunk

ROOT = Path(__file__).resolve().parents[2]
AI_SDK_READER = ROOT / "tests" / "ui_chat" / "read_with_ai_sdk.mjs"
SECRET = "secret provider detail"


def text(words: str, tokens: int = 1) -> dict:
    return workers_ai_chunk(tokens, content=words)


SHAPES = {
    "vllm error": [text("Partial answer"), quirk("error_object", message=SECRET), done_frame()],
    "error body": [text("Partial"), quirk("error_body", message=SECRET, code=400, type="BadRequestError"), text("more"), done_frame()],
    "finish error": [text("Partial"), quirk("finish", reason="error"), done_frame()],
    "capacity": [text("Partial"), quirk("error_object", message="3040: Capacity temporarily exceeded", code=3040), done_frame()],
    "numbers": [text("It is "), quirk("number_content", lexeme="5"), text(". Cost $"), quirk("number_content", lexeme="0.005"),
                text(", cited ["), quirk("number_content", lexeme="1"), text("], ratio "), quirk("number_content", lexeme="1.10"),
                quirk("finish", reason="stop"), done_frame()],
    "native numbers": [native_frame("v"), quirk("number_response", lexeme="1.10"), native_frame(" and "),
                       quirk("number_response", lexeme="1e400"), done_frame()],
    "fields": [quirk("content_parts", texts=["a", "b"]), quirk("text_field", where="delta.text", text="c"),
               quirk("text_field", where="text", text="d"), quirk("text_field", where="message.content", text="e"),
               quirk("finish", reason="stop"), done_frame()],
    "unreadable": [text("ok"), quirk("content_value", json="true"), quirk("finish", reason="stop"), done_frame()],
    "stray bom": [text("a"), quirk("bom_line", text="lost"), quirk("finish", reason="stop"), done_frame()],
    "length": [text("Cut"), quirk("finish", reason="max_tokens"), done_frame()],
    "filtered": [text("Cut"), quirk("finish", reason="content_filter"), done_frame()],
    "unknown": [text("Ends"), quirk("finish", reason="repetition"), done_frame()],
    "reasoning": [quirk("number_reasoning", lexeme="5"), quirk("reasoning_pair", reasoning_content="", reasoning=" r"),
                  text("x"), quirk("finish", reason="stop"), done_frame()],
    "text then call": [text("Checking. S"),
                       send('data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function",'
                            '"function":{"name":"get_weather","arguments":"{}"}}]}}]}\n\n'),
                       quirk("finish", reason="tool_calls"), done_frame()],
    "native budget spent": [native_frame("Cut"), usage_frame(3, 8), done_frame()],
    # From the attack on this issue: an error inside a choice, a failure in capitals.
    "choice error": [text("Partial"), send('data: {"choices":[{"index":0,"delta":{},"error":{"message":"' + SECRET + '","code":500}}]}\n\n'),
                     done_frame()],
    "shouted error": [text("Partial"), quirk("finish", reason="ERROR"), done_frame()],
    # Native arguments are written back with their numbers as sent, by a recursive writer:
    # 60 levels, 63 with the frame's own (the most a frame may nest is 64), each holding a number it must keep.
    "deep arguments": [send('data: {"response":"","tool_calls":[{"name":"f","arguments":' + '{"a":[1.10,' * 30 + "0" + "]}" * 30 + "}]}\n\n"),
                       done_frame()],
}
SHAPE_OPTIONS = scripted_options([text("hello"), done_frame()], prompts={prompt: script(steps) for prompt, steps in SHAPES.items()})

# What /api/chat ends with for each: (text, terminal, code or finish_reason, skipped).
EXPECTED = {
    "vllm error": ("Partial answer", "error", "generation_failed", None),
    "error body": ("Partial", "error", "generation_failed", None),
    "finish error": ("Partial", "error", "generation_failed", None),
    "capacity": ("Partial", "error", "model_unavailable", None),
    "choice error": ("Partial", "error", "generation_failed", None),
    "shouted error": ("Partial", "error", "generation_failed", None),
    "numbers": ("It is 5. Cost $0.005, cited [1], ratio 1.10", "done", "stop", 0),
    "native numbers": ("v1.10 and 1e400", "done", None, 0),
    "fields": ("abcde", "done", "stop", 0),
    "unreadable": ("ok", "done", "stop", 1),
    "stray bom": ("a", "done", "stop", 1),
    "length": ("Cut", "done", "length", 0),
    "filtered": ("Cut", "done", "content_filter", 0),
    "unknown": ("Ends", "done", "other", 0),
}
FAILED = [prompt for prompt, expected in EXPECTED.items() if expected[1] == "error"]


def ask(prompt: str, **extra: object) -> dict:
    return {"messages": [{"role": "user", "content": prompt}], **extra}


def outcome(result) -> tuple:
    terminal = result.terminal
    if terminal.name == "error":
        return result.text, "error", terminal.data["code"], None
    return result.text, "done", terminal.data["finish_reason"], terminal.data["skipped"]


@pytest.fixture
def runtime(start_runtime) -> LocalRuntime:
    return start_runtime(SHAPE_OPTIONS)


async def test_each_shape_ends_api_chat_as_it_should_in_sse_and_ndjson(runtime, http):
    for prompt, expected in EXPECTED.items():
        sse = await chat(http, runtime.url, ask(prompt))
        ndjson = await chat(http, runtime.url, ask(prompt), headers={"accept": "application/x-ndjson"})
        assert outcome(sse) == expected, prompt
        assert outcome(ndjson) == expected, prompt
        assert SECRET not in sse.body.decode() + ndjson.body.decode()
    reasoning = await chat(http, runtime.url, ask("reasoning"))
    assert [e.data["text"] for e in reasoning.events if e.name == "reasoning"] == ["5", " r"]
    assert SECRET not in "\n".join(runtime.lines), "the provider's message is never logged"


async def test_each_shape_ends_a_resumable_answer_and_its_replay_the_same_way(runtime, http):
    for prompt, expected in EXPECTED.items():
        live = await chat(http, runtime.url, ask(prompt, resumable=True))
        assert outcome(live) == expected, prompt
        replayed = await chat(http, runtime.url, path=f"/api/chat/streams/{live.events[0].data['stream_id']}", method="GET")
        assert outcome(replayed) == expected, prompt
        assert [e.name for e in replayed.events] == live.names, prompt


async def test_a_native_answer_that_spent_its_budget_ends_with_length_on_every_surface(runtime, http):
    # Native frames carry no finish reason; usage at the budget says the answer was cut there.
    for extra in ({}, {"resumable": True}):
        result = await chat(http, runtime.url, ask("native budget spent", max_tokens=8, **extra))
        assert outcome(result) == ("Cut", "done", "length", 0), extra
    assert outcome(await chat(http, runtime.url, ask("native budget spent", max_tokens=9)))[2] is None
    ui = await chat(http, runtime.url, {"messages": [{"id": "m0", "role": "user", "parts": [{"type": "text", "text": "native budget spent"}]}],
                                        "max_tokens": 8}, path="/api/ui-chat")
    assert [e.data.get("finishReason") for e in ui.events if e.data.get("type") == "finish"] == ["length"]


async def test_native_arguments_as_deep_as_a_frame_may_nest_keep_their_numbers(runtime, http):
    result = await chat(http, runtime.url, ask("deep arguments"))
    calls = [e.data for e in result.events if e.name == "tool_call"]
    assert result.terminal.name == "done" and len(calls) == 1
    assert calls[0]["arguments"] == '{"a":[1.10,' * 30 + "0" + "]}" * 30


def sdk(runtime: LocalRuntime) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=runtime.url + "/v1", api_key="no AUTH_TOKEN here", max_retries=0, timeout=30)


async def test_the_openai_sdk_raises_on_each_failure_while_streaming_and_gets_an_error_collected(runtime, http):
    client = sdk(runtime)
    for prompt in FAILED:
        code = EXPECTED[prompt][2]
        seen = []
        with pytest.raises(openai.APIError) as raised:
            stream = await client.chat.completions.create(model="@cf/zai-org/glm-4.7-flash", messages=ask(prompt)["messages"], stream=True)
            async for chunk in stream:
                seen += [choice.finish_reason for choice in chunk.choices]
        assert raised.value.code == code, prompt
        assert seen and all(reason is None for reason in seen), f"{prompt}: a failure is never finish_reason stop"
        with pytest.raises(openai.APIStatusError) as collected:
            await client.chat.completions.create(model="@cf/zai-org/glm-4.7-flash", messages=ask(prompt)["messages"])
        assert collected.value.status_code == 502 and collected.value.code == code, prompt


async def test_v1_keeps_every_text_and_names_the_gaps_and_the_cut(runtime, http):
    client = sdk(runtime)
    for prompt, (expected_text, ending, reason, skipped) in EXPECTED.items():
        if ending == "error":
            continue
        chunks = [chunk async for chunk in await client.chat.completions.create(
            model="@cf/zai-org/glm-4.7-flash", messages=ask(prompt)["messages"], stream=True)]
        streamed = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
        finish = [chunk for chunk in chunks if chunk.choices and chunk.choices[0].finish_reason]
        assert streamed == expected_text, prompt
        assert len(finish) == 1
        assert finish[0].choices[0].finish_reason == {"other": "stop", None: "stop"}.get(reason, reason), prompt
        assert (finish[0].model_extra or {}).get("skipped_frames", 0) == skipped, prompt
        response = await http.post(runtime.url + "/v1/chat/completions", json=ask(prompt, model="@cf/zai-org/glm-4.7-flash"))
        assert response.status_code == 200
        assert response.json()["choices"][0]["message"]["content"] == expected_text, prompt
        assert response.headers.get("x-skipped-frames") == (str(skipped) if skipped else None), prompt
        assert response.json().get("skipped_frames", 0) == skipped, prompt


async def test_stop_releases_held_text_before_a_tool_call_that_follows_it(runtime, http):
    # `stop` is /v1's (our protocol has none); streamed is where the order shows.
    stop = {"stop": ["STOP"]}
    streamed = await http.post(runtime.url + "/v1/chat/completions",
                               json=ask("text then call", model="@cf/zai-org/glm-4.7-flash", stream=True, **stop))
    order = []
    for line in streamed.text.split("\n"):
        if line.startswith("data: {"):
            delta = json.loads(line[6:])["choices"][0]["delta"] if json.loads(line[6:]).get("choices") else {}
            if delta.get("content"):
                order.append(delta["content"])
            if delta.get("tool_calls") and order[-1:] != ["<call>"]:  # its start, then its arguments
                order.append("<call>")
    assert "".join(order) == "Checking. S<call>"


def read_with_ai_sdk(runtime: LocalRuntime, prompt: str) -> dict:
    messages = [{"id": "m0", "role": "user", "parts": [{"type": "text", "text": prompt}]}]
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["node", str(AI_SDK_READER), runtime.url + "/api/ui-chat", json.dumps(messages)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


UI_CASES = ["vllm error", "finish error", "numbers", "unreadable", "length", "unknown"]


def test_the_ai_sdk_reads_failures_as_errors_and_finish_metadata_names_the_gaps(runtime):
    for prompt in UI_CASES:
        expected_text, ending, reason, skipped = EXPECTED[prompt]
        read = read_with_ai_sdk(runtime, prompt)
        assert read["text"] == expected_text, prompt
        if ending == "error":
            assert "finish" not in read["chunks"] and read["errors"] and reason in read["errors"][0], prompt
            assert SECRET not in json.dumps(read)
        else:
            assert read["errors"] == [] and read["chunks"][-1] == "finish", prompt
            assert (read["metadata"] or {}).get("skipped", 0) == skipped, prompt
