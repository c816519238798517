"""Structured outputs through the real runtime, read by the clients people use for them:
the `openai` SDK's parse and stream, LangChain's with_structured_output and pydantic-ai's
native output; and what every surface reports when the model breaks the schema, or is cut
at its budget. The emulator answers a schema with JSON built from it (docs/emulator.md,
"JSON mode"); scripts play the models that break it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI

from tests.harness.client import chat
from tests.harness.runtime import LocalRuntime, RuntimeOptions
from tests.harness.scenarios import done_frame, generated, native_frame, script, usage_frame
from tests.openai_api.order import Order

ROOT = Path(__file__).resolve().parents[2]
MODEL = "@cf/zai-org/glm-4.7-flash"  # wrangler.toml's MODEL: OpenAI's response_format, streamed
LEGACY = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # Cloudflare's JSON mode: answers whole


ORDER_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["id", "items", "status"],
    "properties": {
        "id": {"type": "string"},
        "items": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["name", "quantity"],
            "properties": {"name": {"type": "string"}, "quantity": {"type": "integer"}},
        }},
        "status": {"type": "string", "enum": ["open", "shipped"]},
    },
}
STRICT_ORDER = {"type": "json_schema", "json_schema": {"name": "order", "schema": ORDER_SCHEMA, "strict": True}}
LOOSE_ORDER = {"type": "json_schema", "json_schema": {"name": "order", "schema": ORDER_SCHEMA}}

BROKEN = "Answer with the wrong types."  # valid JSON that breaks ORDER_SCHEMA (id is a number)
PROSE = "Answer in prose."  # not JSON at all
CUT = "Run out of tokens."  # cut at max_tokens in the middle of the JSON
SLOW = "Think it over."  # the legacy model's whole answer takes 2 s
BUDGET = 12

# One runtime for every case: generated answers unless the prompt names a script, and the
# legacy model among the fallbacks, so a request may name it. (A script's steps stream: the
# legacy model, asked for a whole answer, always gets a generated one.)
STRUCTURED = RuntimeOptions(
    ai_format=None, ai_pace=0,
    ai_script=json.dumps({**generated(), "prompts": {
        BROKEN: script([native_frame('{"id": 7, "items": [], '), native_frame('"status": "open"}'), usage_frame(5, 9), done_frame()]),
        PROSE: script([native_frame("Sure! Here is your order: "), native_frame("nothing."), usage_frame(5, 6), done_frame()]),
        CUT: script([native_frame('{"id": "a1", "items": [{"na'), usage_frame(5, BUDGET), done_frame()]),
        SLOW: {**generated(), "start_delay_ms": 2000},
    }}),
    variables=(("FALLBACK_MODELS", f"@cf/google/gemma-4-26b-a4b-it,{LEGACY}"), ("PING_INTERVAL_MS", "200"), ("START_TIMEOUT_MS", "500")),
)


def sdk(runtime: LocalRuntime) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=runtime.url + "/v1", api_key="any", max_retries=0, timeout=30)


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def ui_user(text: str) -> list[dict[str, Any]]:
    return [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}]


def ai_runs(runtime: LocalRuntime, mark: int) -> list[dict[str, Any]]:
    return [r for r in runtime.records(mark) if r["event"] == "ai_run"]


# --- the SDKs' own structured-output calls ------------------------------------------------


@pytest.mark.parametrize("model", [MODEL, LEGACY], ids=["streams", "answers-whole"])
async def test_parse_gives_the_pydantic_model_streamed_and_collected(start_runtime, model):
    runtime = start_runtime(STRUCTURED)
    mark = len(runtime.lines)
    collected = await sdk(runtime).chat.completions.parse(model=model, messages=user("An order, please."), response_format=Order)
    assert isinstance(collected.choices[0].message.parsed, Order) and collected.choices[0].finish_reason == "stop"
    async with sdk(runtime).chat.completions.stream(model=model, messages=user("An order, please."), response_format=Order) as stream:
        final = await stream.get_final_completion()
    assert isinstance(final.choices[0].message.parsed, Order)
    sent = [r for r in ai_runs(runtime, mark) if r["model"] == model]
    assert len(sent) == 2 and all(r["response_format"]["type"] == "json_schema" for r in sent)
    # Each model gets the shape its schema takes, and only the legacy one is asked for a whole answer.
    shape = "cloudflare" if model == LEGACY else "openai"
    assert all(r["response_format"]["shape"] == shape and r["stream"] is (model == MODEL) for r in sent)


async def test_json_object_is_a_json_object(start_runtime):
    runtime = start_runtime(STRUCTURED)
    completion = await sdk(runtime).chat.completions.create(model=MODEL, messages=user("Describe it."),
                                                            response_format={"type": "json_object"})
    assert isinstance(json.loads(completion.choices[0].message.content), dict)


async def test_langchain_with_structured_output_by_json_schema(start_runtime):
    from langchain_openai import ChatOpenAI

    runtime = start_runtime(STRUCTURED)
    llm = ChatOpenAI(model=MODEL, base_url=runtime.url + "/v1", api_key="any", max_retries=0)
    order = await llm.with_structured_output(Order, method="json_schema").ainvoke("An order, please.")
    assert isinstance(order, Order)


async def test_pydantic_ai_with_a_native_output_type(start_runtime):
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    runtime = start_runtime(STRUCTURED)
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=runtime.url + "/v1", api_key="any"))
    result = await Agent(model, output_type=NativeOutput(Order)).run("An order, please.")
    assert isinstance(result.output, Order)


# --- what is reported as finished ---------------------------------------------------------


@pytest.mark.parametrize(("prompt", "response_format", "code"), [
    pytest.param(BROKEN, STRICT_ORDER, "output_schema_mismatch", id="strict-schema-broken"),
    pytest.param(PROSE, STRICT_ORDER, "output_not_json", id="prose-for-a-schema"),
    pytest.param(PROSE, {"type": "json_object"}, "output_not_json", id="prose-for-json-object"),
])
async def test_an_answer_that_is_not_what_was_asked_ends_in_an_error_on_every_surface(start_runtime, http, prompt, response_format, code):
    runtime = start_runtime(STRUCTURED)
    ours = await chat(http, runtime.url, {"messages": user(prompt), "response_format": response_format})
    assert ours.status == 200 and ours.text, "the text was streamed as it came"
    assert ours.terminal.name == "error" and ours.terminal.data["code"] == code
    assert [e.name for e in ours.events].count("done") == 0

    ui = await http.post(runtime.url + "/api/ui-chat", json={"messages": ui_user(prompt), "response_format": response_format})
    chunks = [json.loads(line[6:]) for line in ui.text.splitlines() if line.startswith("data: {")]
    assert chunks[-1]["type"] == "error" and code in chunks[-1]["errorText"]
    assert not any(chunk["type"] == "finish" for chunk in chunks)

    collected = await http.post(runtime.url + "/v1/chat/completions", json={"model": MODEL, "messages": user(prompt),
                                                                           "response_format": response_format})
    assert collected.status_code == 502 and collected.json()["error"]["code"] == code
    with pytest.raises(openai.APIError) as caught:
        stream = await sdk(runtime).chat.completions.create(model=MODEL, messages=user(prompt), response_format=response_format,
                                                            stream=True)
        async for _ in stream:
            pass
    assert caught.value.code == code and caught.value.message == collected.json()["error"]["message"]


async def test_a_schema_that_is_not_strict_asks_for_json_and_checks_only_that(start_runtime, http):
    runtime = start_runtime(STRUCTURED)
    broken = await chat(http, runtime.url, {"messages": user(BROKEN), "response_format": LOOSE_ORDER})
    assert broken.terminal.name == "done", "valid JSON, and the schema was a hint"
    prose = await chat(http, runtime.url, {"messages": user(PROSE), "response_format": LOOSE_ORDER})
    assert prose.terminal.data["code"] == "output_not_json"


async def test_an_answer_cut_at_its_budget_is_reported_as_the_cut_it_is(start_runtime, http):
    runtime = start_runtime(STRUCTURED)
    ours = await chat(http, runtime.url, {"messages": user(CUT), "response_format": STRICT_ORDER, "max_tokens": BUDGET})
    assert ours.terminal.name == "done" and ours.terminal.data["finish_reason"] == "length", "a cut, not a schema failure"
    with pytest.raises(openai.LengthFinishReasonError):
        await sdk(runtime).chat.completions.parse(model=MODEL, messages=user(CUT), response_format=Order, max_tokens=BUDGET)


async def test_a_whole_answer_is_pinged_while_it_is_written_then_streamed(start_runtime, http):
    # The legacy model's JSON mode does not stream: its whole answer comes after 2 s, past
    # START_TIMEOUT_MS (0.5 s); the stream starts at the deadline and pings meanwhile.
    runtime = start_runtime(STRUCTURED)
    began = time.monotonic()
    result = await chat(http, runtime.url, {"messages": user(SLOW), "model": LEGACY, "response_format": STRICT_ORDER})
    assert result.terminal.name == "done" and time.monotonic() - began >= 2
    Order.model_validate_json(result.text)
    assert len(result.comments) >= 3, "pings while the answer was written"
    assert [e.name for e in result.events if e.name == "delta"] == ["delta"], "the whole answer, as one piece"


async def test_a_model_that_takes_no_response_format_is_left_out_or_refused_when_named(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, variables=(
        ("MODEL", "@cf/mistralai/mistral-small-3.1-24b-instruct"), ("FALLBACK_MODELS", MODEL),
    )))
    mark = len(runtime.lines)
    answered = await chat(http, runtime.url, {"messages": user("An order."), "response_format": STRICT_ORDER})
    assert answered.terminal.name == "done" and answered.events[0].data["model"] == MODEL
    assert [r["model"] for r in ai_runs(runtime, mark)] == [MODEL], "MODEL takes none: never asked"
    named = await http.post(runtime.url + "/v1/chat/completions", json={
        "model": "@cf/mistralai/mistral-small-3.1-24b-instruct", "messages": user("x"), "response_format": STRICT_ORDER})
    assert named.status_code == 400 and named.json()["error"]["param"] == "response_format"


INSTRUCTOR = ROOT / ".venv-instructor" / "bin" / "python"


def test_instructor_in_json_schema_mode_and_in_its_default_tools_mode(start_runtime):
    # instructor needs an older openai than the rest of the suite: its own venv (the Makefile).
    assert INSTRUCTOR.exists(), "run `make test`, which builds .venv-instructor"
    runtime = start_runtime(STRUCTURED)
    mark = len(runtime.lines)
    done = subprocess.run([str(INSTRUCTOR), str(Path(__file__).with_name("read_with_instructor.py")), runtime.url, MODEL],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    assert {mode: Order.model_validate(order) for mode, order in results.items()}.keys() == {"json_schema_mode", "tool_call"}
    sent = ai_runs(runtime, mark)
    assert sent[0]["response_format"]["type"] == "json_schema" and sent[1]["tools"], "one answer to a schema, one tool call"
