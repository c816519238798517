"""/v1/messages streamed by the `@anthropic-ai/sdk` npm package in Node (1.10.0): the
client Claude Code is built on, reading a tool call as it streams."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.harness.runtime import RuntimeOptions
from tests.openai_api.test_openai_sdk import FAILURES

ROOT = Path(__file__).resolve().parents[2]
READER = Path(__file__).with_name("stream_with_anthropic_sdk.mjs")
WEATHER = [{"name": "get_weather", "description": "The weather in a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def stream_with_anthropic_sdk(url: str, body: dict[str, Any], api_key: str = "any") -> dict[str, Any]:
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(["node", str(READER), url, api_key, json.dumps(body)], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


async def test_the_typescript_sdk_streams_a_tool_call(start_runtime):
    # OpenAI-style chunks: the emulator sends a call's arguments in pieces, as models do.
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format="openai"))
    read = stream_with_anthropic_sdk(runtime.url, {"model": "claude-opus-5-5", "max_tokens": 512, "tools": WEATHER,
                                                   "messages": [{"role": "user", "content": "What is the weather in Paris?"}]})
    assert "error" not in read, read
    message = read["message"]
    assert message["stop_reason"] == "tool_use"
    [call] = [block for block in message["content"] if block["type"] == "tool_use"]
    assert call["name"] == "get_weather" and set(call["input"]) == {"city"}
    # The input arrived in pieces as it streamed, and they make the whole.
    assert len(read["inputDeltas"]) > 1 and json.loads("".join(read["inputDeltas"])) == call["input"]
    assert read["events"][0] == "message_start" and read["events"][-2:] == ["message_delta", "message_stop"]


async def test_a_stream_failing_midway_throws_in_the_typescript_sdks_loop(start_runtime):
    runtime = start_runtime(FAILURES)  # the OpenAI suite's runtime of failures, shared
    read = stream_with_anthropic_sdk(runtime.url, {"model": "claude-opus-5-5", "max_tokens": 64,
                                                   "messages": [{"role": "user", "content": "fails midway"}]})
    assert read["error"]["class"] == "APIError" and read["error"]["type"] == "api_error", read
    assert "secret" not in json.dumps(read)
