"""POST /api/ui-chat read by the real `ai` package (Vercel AI SDK) in Node, through the real runtime."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.runtime.client import chat
from tests.runtime.harness import RuntimeOptions
from tests.runtime.scripts import echo, error, scripted_options, sleep

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


async def test_the_ai_sdk_assembles_the_same_text_as_our_protocol(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    messages = ui_messages("Hello there", "Hi! How can I help?", "Explain streams.")
    read = read_with_ai_sdk(runtime.url, messages)
    plain = [{"role": m["role"], "content": m["parts"][1]["text"]} for m in messages]
    ours = await chat(http, runtime.url, {"messages": plain})
    assert read["errors"] == []
    assert read["text"] == ours.text and len(read["text"]) > 0
    assert read["chunks"][0] == "start" and read["chunks"][1] == "text-start"
    assert read["chunks"][-2:] == ["text-end", "finish"]
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
