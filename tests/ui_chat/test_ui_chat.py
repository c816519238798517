"""POST /api/ui-chat read by the real `ai` package (Vercel AI SDK) in Node, through the real runtime."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.harness.client import chat
from tests.harness.runtime import RuntimeOptions
from tests.harness.scenarios import echo, error, scripted_options, sleep
from tests.image_files import data_url, png

ROOT = Path(__file__).resolve().parents[2]
READER = Path(__file__).with_name("read_with_ai_sdk.mjs")


def ui_messages(*texts: str) -> list[dict]:
    roles = ["user", "assistant"]
    return [
        {"id": f"m{i}", "role": roles[i % 2], "parts": [{"type": "step-start"}, {"type": "text", "text": text}]}
        for i, text in enumerate(texts)
    ]


def read_with_ai_sdk(url: str, messages: list[dict]) -> dict:
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        ["node", str(READER), url + "/api/ui-chat", json.dumps(messages)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.smoke
async def test_the_ai_sdk_assembles_the_same_text_as_our_protocol(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    messages = ui_messages("Hello there", "Hi! How can I help?", "Explain streams.")
    read = read_with_ai_sdk(runtime.url, messages)
    plain = [{"role": m["role"], "content": m["parts"][1]["text"]} for m in messages]
    ours = await chat(http, runtime.url, {"messages": plain})
    assert read["errors"] == []
    assert read["text"] == ours.text and len(read["text"]) > 0
    assert read["chunks"][:3] == ["start", "start-step", "text-start"]  # each answer is one step
    assert read["chunks"][-3:] == ["text-end", "finish-step", "finish"]
    assert read["metadata"]["usage"]["completion_tokens"] > 0


async def test_ui_chat_sends_the_protocol_header_and_validates_like_chat(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    response = await http.post(runtime.url + "/api/ui-chat", json={"messages": ui_messages("hi")})
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.text.endswith("data: [DONE]\n\n")
    bad = await http.post(runtime.url + "/api/ui-chat", json={"messages": [{"role": "system", "parts": [{"type": "text", "text": "x"}]}]})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request"
    no_parts = await http.post(runtime.url + "/api/ui-chat", json={"messages": [{"role": "user", "content": "x"}]})
    assert no_parts.status_code == 400


async def test_a_failing_upstream_reaches_the_ai_sdk_as_an_error_chunk(start_runtime):
    runtime = start_runtime(scripted_options([echo(), sleep(100), error("secret provider detail")]))
    read = read_with_ai_sdk(runtime.url, ui_messages("partial answer"))
    assert read["text"] == "partial answer"
    assert "error" in read["chunks"] and "finish" not in read["chunks"]
    assert read["errors"] and "generation_failed" in read["errors"][0]
    assert "secret provider detail" not in json.dumps(read)


RESUMER = Path(__file__).with_name("resume_with_ai_sdk.mjs")


async def test_the_ai_sdk_resumes_a_dropped_answer_of_a_chat_and_finds_none_once_it_finished(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=60, ai_reply_tokens=60))
    messages = ui_messages("Resume me")
    uninterrupted = read_with_ai_sdk(runtime.url, messages)
    mark = len(runtime.lines)
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        ["node", str(RESUMER), runtime.url + "/api/ui-chat", "chat-resume-1", json.dumps(messages), "4"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    read = json.loads(result.stdout.strip().splitlines()[-1])
    assert read["before"][:3] == ["start", "start-step", "text-start"] and len(read["before"]) == 4
    assert read["resumed"] and read["errors"] == []
    assert read["text"] == uninterrupted["text"] and read["chunks"][-1] == "finish"
    assert read["afterFinish"] is False, "a finished answer is no longer in progress (204)"
    assert sum(r["event"] == "ai_run" for r in runtime.records(mark)) == 1
    none = await http.get(runtime.url + "/api/ui-chat/never-used/stream")
    assert none.status_code == 204


async def test_a_resumable_ui_chat_needs_its_chat_id(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    response = await http.post(runtime.url + "/api/ui-chat", json={"messages": ui_messages("hi"), "resumable": True})
    assert response.status_code == 400 and "id" in response.json()["error"]["message"]
    bad = await http.post(runtime.url + "/api/ui-chat", json={"messages": ui_messages("hi"), "resumable": True, "id": "a/b"})
    assert bad.status_code == 400


async def test_a_file_part_as_use_chat_sends_an_attached_image_is_answered_about_that_image(start_runtime):
    # What DefaultChatTransport sends for sendMessage({text, files}): the files' parts
    # (convertFileListToFileUIParts: a data URL and the browser's type) before the text.
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format=None))
    file_part = {"type": "file", "mediaType": "image/png", "filename": "dot.png", "url": data_url(png(3, 2))}
    read = read_with_ai_sdk(runtime.url, [{"id": "m0", "role": "user", "parts": [file_part, {"type": "text", "text": "What is it?"}]}])
    assert read["errors"] == [] and read["text"].startswith("I see a 3\u00d72 PNG.")
    assert read["chunks"][-1] == "finish"
