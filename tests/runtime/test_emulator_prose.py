"""The Workers AI emulator's readable answers (AI_STYLE "prose", `make dev`'s default) in the
real runtime: deterministic markdown built from the question, streamed in either framing
through POST /api/chat. Every other suite runs the emulator's test vocabulary instead
(RuntimeOptions.ai_style "words")."""

from __future__ import annotations

import re
from typing import Any

import pytest

from chat.model import catalog
from tests.harness.client import ChatResult, chat
from tests.harness.runtime import LocalRuntime, RuntimeOptions

GLM = "@cf/zai-org/glm-4.7-flash"  # wrangler.toml's MODEL: OpenAI framing, thinks first
LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # native framing
GEMMA = "@cf/google/gemma-4-26b-a4b-it"  # wrangler.toml's fallback
GLM_THOUGHTS = 24  # the emulator's reasoning tokens at GLM's default effort (medium)

# One runtime: each model in its own framing, and a native one among those served, so a
# request's `model` picks the framing.
PROSE = RuntimeOptions(ai_style="prose", ai_pace=0, ai_format=None, variables=(("FALLBACK_MODELS", f"{GEMMA},{LLAMA}"),))
QUESTION = "How do I stream chat from a Worker?"

HEADING = re.compile(r"^#{2,3} \S", re.MULTILINE)
LIST_ITEM = re.compile(r"^(?:[-*]|\d+\.) \S", re.MULTILINE)
FENCED_CODE = re.compile(r"^```[a-z]+\n.+?\n```$", re.MULTILINE | re.DOTALL)
TABLE = re.compile(r"^\|.+\|\n\|(?: ?-{3,} ?\|)+\n\|.+\|$", re.MULTILINE)


def asking(text: str, **fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], **fields}


async def answer(http: Any, runtime: LocalRuntime, payload: dict[str, Any]) -> ChatResult:
    result = await chat(http, runtime.url, payload)
    assert result.status == 200 and result.terminal.name == "done", (result.status, result.names)
    return result


def reasoning_of(result: ChatResult) -> str:
    return "".join(e.data["text"] for e in result.events if e.name == "reasoning" and e.data)


def test_the_models_asked_for_stream_in_both_framings():
    framings = {model.id: model.framing for model in catalog.MODELS}
    assert framings[GLM] == "openai" and framings[LLAMA] == "native"


async def test_the_same_question_gets_the_same_answer_byte_for_byte(start_runtime, http):
    runtime = start_runtime(PROSE)
    first = await answer(http, runtime, asking(QUESTION))
    second = await answer(http, runtime, asking(QUESTION))
    assert first.text and first.text.encode() == second.text.encode()
    assert reasoning_of(first) == reasoning_of(second)


async def test_different_questions_get_different_answers(start_runtime, http):
    runtime = start_runtime(PROSE)
    streams = await answer(http, runtime, asking(QUESTION))
    tables = await answer(http, runtime, asking("Which table layout suits a small café in Tokyo?"))
    assert streams.text != tables.text
    assert "stream chat" in streams.text and "small café" in tables.text, "each answer quotes its own question"


@pytest.mark.parametrize("model", [pytest.param(GLM, id="openai-framing"), pytest.param(LLAMA, id="native-framing")])
async def test_the_answer_is_markdown_with_a_heading_a_list_code_and_a_table(start_runtime, http, model):
    runtime = start_runtime(PROSE)
    result = await answer(http, runtime, asking(QUESTION, model=model))
    assert result.events[0].name == "meta" and result.events[0].data and result.events[0].data["model"] == model
    text = result.text
    assert HEADING.search(text), text
    assert len(LIST_ITEM.findall(text)) >= 3, text
    assert FENCED_CODE.search(text), text
    assert TABLE.search(text), text
    assert any(len(character.encode()) >= 3 for character in text), "multi-byte text for the chunking to split"
    assert "emulator" in text, "it says where the answer came from"
    assert result.terminal.data and result.terminal.data["finish_reason"] in ("stop", None)


async def test_a_thinking_model_thinks_in_sentences(start_runtime, http):
    runtime = start_runtime(PROSE)
    reasoning = reasoning_of(await answer(http, runtime, asking(QUESTION, model=GLM)))
    assert re.fullmatch(r"[A-Z][A-Za-z ,.'—]*", reasoning) and "." in reasoning, reasoning


async def test_html_in_the_question_never_reaches_the_answer(start_runtime, http):
    runtime = start_runtime(PROSE)
    result = await answer(http, runtime, asking("<script>alert(1)</script> Why is <b>this</b> bold?"))
    assert "<" not in result.text and "alert" in result.text, result.text


async def test_a_small_token_budget_cuts_the_same_answer_short_with_length(start_runtime, http):
    runtime = start_runtime(PROSE)
    whole = await answer(http, runtime, asking(QUESTION))
    cut = await answer(http, runtime, asking(QUESTION, max_tokens=GLM_THOUGHTS + 20))
    done = cut.terminal.data
    assert done is not None and done["finish_reason"] == "length" and done["usage"]["completion_tokens"] == GLM_THOUGHTS + 20
    assert cut.text and whole.text.startswith(cut.text) and len(cut.text) < len(whole.text)
