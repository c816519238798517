"""/v1/chat/completions read by the `openai` npm package in Node, a second real client."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.harness.client import USER, chat
from tests.harness.runtime import RuntimeOptions
from tests.harness.scenarios import echo, error, scripted_options, sleep

ROOT = Path(__file__).resolve().parents[2]
READER = Path(__file__).with_name("read_with_openai_sdk.mjs")
MODEL = "@cf/zai-org/glm-4.7-flash"


def read_with_openai_sdk(url: str, body: dict, api_key: str = "any") -> dict:
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        ["node", str(READER), url + "/v1", api_key, json.dumps(body)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


async def test_the_node_sdk_streams_the_same_answer_as_our_protocol(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    ours = await chat(http, runtime.url, {"messages": USER})
    read = read_with_openai_sdk(runtime.url, {"model": MODEL, "messages": USER, "stream": True, "stream_options": {"include_usage": True}})
    assert read["text"] == ours.text and len(read["text"]) > 0
    assert read["roles"] == ["assistant"] and read["finishReasons"] == ["stop"]
    assert read["usage"]["total_tokens"] == ours.terminal.data["usage"]["total_tokens"]
    assert read["requestId"]


async def test_the_node_sdk_raises_its_own_error_classes(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    bad = read_with_openai_sdk(runtime.url, {"model": MODEL, "messages": USER, "stream": True, "n": 3})
    assert bad["error"] == {**bad["error"], "class": "BadRequestError", "status": 400, "code": "invalid_request", "param": "n"}
    assert bad["error"]["requestId"]
    missing = read_with_openai_sdk(runtime.url, {"model": "nope", "messages": USER, "stream": True})
    assert (missing["error"]["class"], missing["error"]["code"]) == ("NotFoundError", "model_not_found")


async def test_a_stream_failing_midway_throws_in_the_node_sdks_loop(start_runtime):
    runtime = start_runtime(scripted_options([echo(), sleep(50), error("secret provider detail")]))
    read = read_with_openai_sdk(runtime.url, {"model": MODEL, "messages": [{"role": "user", "content": "partial"}], "stream": True})
    assert read["error"]["class"] == "APIError" and read["error"]["code"] == "generation_failed"
    assert "secret" not in json.dumps(read)
