"""Codex CLI (`codex exec`, 0.171.0), which speaks only the Responses API, against the
local Worker in the real runtime, with its default tools: function tools, a `namespace`
tool and the hosted `web_search` (left out here). Codex is installed on first use into
.dev/codex (about 424 MB; tests/openai_api/codex.py), never by `make dev`.

The emulator calls a tool one of whose name words the question holds (docs/emulator.md):
"command" calls Codex's `exec_command`, with `cmd` "example"; Codex runs it in its
read-only sandbox and sends the result back, which the emulator's next answer starts with."""

from __future__ import annotations

import pytest

from tests.harness.runtime import RuntimeOptions
from tests.openai_api.codex import run_codex

# A runtime of its own would cost a start; the shared one answers at full speed.
FAST = RuntimeOptions(ai_pace=0)


@pytest.mark.smoke
def test_codex_completes_a_turn_with_its_default_tools(start_runtime):
    runtime = start_runtime(FAST)
    mark = len(runtime.lines)
    result = run_codex(runtime.url, "Say hello to the team")
    assert result.returncode == 0, (result.failure(), result.stderr[-2000:])
    assert result.real_errors() == [] and result.last_message()
    [run] = [record for record in runtime.records(mark) if record["event"] == "ai_run"]
    assert "exec_command" in run["tools"] and "multi_agent_v1__spawn_agent" in run["tools"]
    assert not any("web_search" in name for name in run["tools"])


def test_codex_runs_the_models_exec_command_call_and_sends_the_result_back(start_runtime):
    runtime = start_runtime(FAST)
    mark = len(runtime.lines)
    result = run_codex(runtime.url, "Run a command to list the files here")
    assert result.returncode == 0, (result.failure(), result.stderr[-2000:])
    [execution] = result.items("command_execution")
    assert execution["command"].endswith("example'") or "example" in execution["command"]
    assert result.last_message().startswith("Tool result: ")
    runs = [record for record in runtime.records(mark) if record["event"] == "ai_run"]
    assert len(runs) == 2 and runs[1]["history"][-1]["role"] == "tool"


def test_a_generation_that_fails_midway_is_a_failed_turn_in_codex_never_a_reply(start_runtime):
    from tests.openai_api.test_responses_sdk import SCRIPTS

    runtime = start_runtime(SCRIPTS)
    result = run_codex(runtime.url, "vllm error")
    # The half-written message is never shown as the agent's reply.
    assert result.returncode == 1 and result.items("agent_message") == []
    assert "generation_failed" in (result.failure() or "")
