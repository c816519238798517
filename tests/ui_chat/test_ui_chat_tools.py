"""Tool calls on POST /api/ui-chat driven by the real `ai` package (Vercel AI SDK) in Node,
through the real runtime: the SDK's Chat reads the tool part, takes a result with
addToolOutput and sends the next turn by itself; a resumable tool answer replays the same
parts; arguments that are not JSON reach it as its input-error part."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.harness.runtime import LocalRuntime, RuntimeOptions
from tests.harness.scenarios import done_frame, scripted_options, send, sleep
from tests.harness.scenarios import script as upstream
from tests.runtime.test_emulator_tools import TIME

ROOT = Path(__file__).resolve().parents[2]
CHAT = Path(__file__).with_name("chat_tools_with_ai_sdk.mjs")

ASK_TIME = "What is the current time in UTC?"
# Each model in its own framing, as Workers AI streams it (the default model's: OpenAI-style).
OWN_FRAMING = RuntimeOptions(ai_pace=0, ai_format=None)


def run_chat(mode: str, url: str, config: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        ["node", str(CHAT), mode, url + "/api/ui-chat", json.dumps(config)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=90,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def chunk_types(chunks: list[dict[str, Any]]) -> list[str]:
    return [chunk["type"] for chunk in chunks]


def without_reasoning(kinds: list[str]) -> list[str]:
    """Chunk or part types without the reasoning ones (the default model thinks first)."""
    return [kind for kind in kinds if not kind.startswith("reasoning")]


def tool_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for part in message["parts"] if part["type"].startswith("tool-")]


def ai_runs(runtime: LocalRuntime, since: int, count: int) -> list[dict[str, Any]]:
    runtime.wait_for_count("ai_run", count, since)
    runtime.wait_until_quiet()
    return [record for record in runtime.records(since) if record["event"] == "ai_run"]


def openai_chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
    return "data: " + json.dumps(chunk, separators=(",", ":")) + "\n\n"


def call_start(call_id: str, name: str, arguments: str = "") -> str:
    return openai_chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                         "function": {"name": name, "arguments": arguments}}]})


def call_arguments(fragment: str) -> str:
    return openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]})


# Scripted upstreams, one runtime for both: a tool answer slow enough to be resumed while in
# progress (text, then a call whose arguments come in fragments), and a call whose
# arguments are not JSON.
RESUME_ME = "Resume a tool call"
BREAK_ME = "Break the arguments"
SCRIPTED = scripted_options(prompts={
    RESUME_ME: upstream([
        send(openai_chunk({"role": "assistant", "content": "Let me check."})), sleep(400),
        send(call_start("call_r1", "current_time")), sleep(150),
        send(call_arguments('{"timezone":')), sleep(150),
        send(call_arguments('"Asia/Tokyo"}')), sleep(150),
        send(openai_chunk({}, "tool_calls")), done_frame(),
    ]),
    BREAK_ME: upstream([
        send(call_start("call_1", "current_time", "{broken")),
        send(openai_chunk({}, "tool_calls")), done_frame(),
    ]),
})


async def test_the_ai_sdk_answers_a_tool_call_and_sends_the_result_back_by_itself(start_runtime):
    runtime = start_runtime(OWN_FRAMING)
    mark = len(runtime.lines)
    output = "2026-05-01T12:00:00Z (UTC), a Friday"
    read = run_chat("loop", runtime.url, {"chatId": "chat-tools-1", "text": ASK_TIME, "tools": [TIME], "output": output})
    assert read["errors"] == [] and read["status"] == "ready"
    requests, responses = read["log"]["requests"], read["log"]["responses"]

    # The first answer: the call, streamed as tool-input parts in one step, ending with tool-calls.
    first = responses[0]
    types = without_reasoning(chunk_types(first))
    assert types[:3] == ["start", "start-step", "tool-input-start"], types
    assert types[-3:] == ["tool-input-available", "finish-step", "finish"], types
    assert set(types[3:-3]) == {"tool-input-delta"}, types
    assert first[-1]["finishReason"] == "tool-calls"
    [call_id] = [chunk["toolCallId"] for chunk in first if chunk["type"] == "tool-input-start"]
    assert call_id.startswith("chatcmpl-tool-"), "the model's own id, not one the Worker made up"
    assert "".join(chunk["inputTextDelta"] for chunk in first if chunk["type"] == "tool-input-delta") == '{"timezone":"UTC"}'

    # The SDK's message after it: the tool part, waiting for its result.
    [user, assistant] = read["afterFirst"]
    assert user["role"] == "user" and assistant["role"] == "assistant"
    assert without_reasoning([part["type"] for part in assistant["parts"]]) == ["step-start", "tool-current_time"]
    [part] = tool_parts(assistant)
    assert part["toolCallId"] == call_id and part["state"] == "input-available"
    assert part["input"] == {"timezone": "UTC"}

    # addToolOutput made the SDK send the next turn itself (and then no other): it decided
    # "not yet" after the call, "send" once the result was added, "done" after the answer.
    assert read["added"] and read["decisions"] == [False, True, False]
    assert len(requests) == 2, [request["body"]["messages"] for request in requests]
    second_body = requests[1]["body"]
    assert second_body["id"] == "chat-tools-1" and second_body["trigger"] == "submit-message"
    assert second_body["tools"] == [TIME]
    [sent_part] = tool_parts(second_body["messages"][-1])
    assert sent_part["state"] == "output-available" and sent_part["output"] == output
    assert sent_part["toolCallId"] == call_id and sent_part["input"] == {"timezone": "UTC"}

    # The model got the call and its result, under the model's id.
    [run_one, run_two] = ai_runs(runtime, mark, 2)
    assert run_one["tools"] == ["current_time"] and run_one["history"][-1] == {"role": "user"}
    assert run_two["history"][-3:] == [
        {"role": "user"},
        {"role": "assistant", "tool_calls": [{"id": call_id, "name": "current_time"}]},
        {"role": "tool", "tool_call_id": call_id},
    ]

    # The answer to it, appended to the same assistant message as its second step.
    second = responses[1]
    assert chunk_types(second)[:2] == ["start", "start-step"] and chunk_types(second)[-2:] == ["finish-step", "finish"]
    assert second[-1]["finishReason"] == "stop"
    final = read["messages"][-1]
    kinds = without_reasoning([part["type"] for part in final["parts"]])
    assert kinds[:3] == ["step-start", "tool-current_time", "step-start"] and set(kinds[3:]) == {"text"}, kinds
    [answered] = tool_parts(final)
    assert answered["state"] == "output-available" and answered["output"] == output and answered["toolCallId"] == call_id
    text = "".join(part["text"] for part in final["parts"] if part["type"] == "text")
    assert text.startswith("Tool result: " + output[:60])
    # The SDK's own servers continue the message they were sent (`start` with its id, or
    # none); a new id makes the Chat keep the call twice, in two messages, and send both
    # (with the result twice) to the model on the next turn.
    assert second[0].get("messageId") in (None, assistant["id"]), "the continuation's start names another message"
    assert [message["role"] for message in read["messages"]] == ["user", "assistant"]
    assert final["id"] == assistant["id"]


async def test_the_ai_sdk_resumes_a_tool_answer_with_the_same_parts(start_runtime):
    runtime = start_runtime(SCRIPTED)
    mark = len(runtime.lines)
    read = run_chat("resume", runtime.url, {"chatId": "chat-tools-resume", "text": RESUME_ME, "tools": [TIME]})
    assert read["errors"] == []
    live, reloaded = read["live"], read["reloaded"]
    assert live["log"]["requests"][0]["body"]["resumable"] is True
    assert [request["method"] for request in reloaded["log"]["requests"]] == ["GET"]
    assert reloaded["log"]["requests"][0]["url"].endswith("/api/ui-chat/chat-tools-resume/stream")

    [_, answer] = live["messages"]
    [_, replayed] = reloaded["messages"]
    [part] = tool_parts(answer)
    assert part["type"] == "tool-current_time" and part["toolCallId"] == "call_r1"
    assert part["state"] == "input-available" and part["input"] == {"timezone": "Asia/Tokyo"}
    assert [p["type"] for p in answer["parts"]] == ["step-start", "text", "tool-current_time"]
    assert replayed["id"] == answer["id"] and replayed["parts"] == answer["parts"]

    # The replay is the whole answer from its start: the same chunks, the call's fragments included.
    [live_chunks], [replayed_chunks] = live["log"]["responses"], reloaded["log"]["responses"]
    without_padding = [[{k: v for k, v in chunk.items() if k != "p"} for chunk in chunks] for chunks in (live_chunks, replayed_chunks)]
    assert without_padding[0] == without_padding[1]
    assert replayed_chunks[-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert read["afterFinish"] is False, "a finished answer is no longer in progress (204)"
    assert len(ai_runs(runtime, mark, 1)) == 1, "the reader was served from the stored answer"


async def test_tool_arguments_that_are_not_json_reach_the_ai_sdk_as_an_input_error(start_runtime):
    runtime = start_runtime(SCRIPTED)
    read = run_chat("read", runtime.url, {"chatId": "chat-tools-broken", "text": BREAK_ME, "tools": [TIME]})
    assert read["errors"] == [] and read["status"] == "ready"
    [chunks] = read["log"]["responses"]
    assert chunk_types(chunks) == ["start", "start-step", "tool-input-start", "tool-input-delta", "tool-input-error",
                                   "finish-step", "finish"]
    assert chunks[-1]["finishReason"] == "tool-calls"
    [_, answer] = read["messages"]
    [part] = tool_parts(answer)
    assert part["type"] == "tool-current_time" and part["toolCallId"] == "call_1"
    assert part["state"] == "output-error" and part["input"] == "{broken"
    assert isinstance(part["errorText"], str) and part["errorText"]
