"""Claude Code (2.1.328) driving the Worker's /v1/messages in the real runtime, with its
own defaults: no model flags (it asks for claude-opus-5-5 and gets MODEL), its system
prompt, tools and betas as it sends them. Installed on first use into .dev/claude-code
(tests/anthropic_api/claude_code.py); a runtime test, so `make check` never installs it."""

from __future__ import annotations

from tests.anthropic_api.claude_code import run_claude
from tests.harness.runtime import RuntimeOptions

MODEL = "@cf/zai-org/glm-4.7-flash"


def runs(runtime, mark: int) -> list[dict]:
    return [record for record in runtime.records(mark) if record["event"] == "ai_run"]


async def test_claude_code_completes_a_turn(start_runtime):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    mark = len(runtime.lines)
    ran = run_claude(runtime.url, "say hi")
    assert ran.returncode == 0, (ran.stdout[-2000:], ran.stderr[-2000:])
    result = ran.result
    assert result["type"] == "result" and result["is_error"] is False and result["result"].strip()
    [run] = runs(runtime, mark)
    assert run["model"] == MODEL and "Bash" in run["tools"] and run["stream"] is True


async def test_claude_code_runs_a_tool_the_model_calls_and_sends_its_result_back(start_runtime):
    # The emulator calls the tools a prompt names (ai_emulator/tools.js): here Bash, with the
    # plainest input its schema allows ({"command": "example"}). Headless Claude Code runs
    # only what it is allowed to: --allowedTools Bash, as a script would set it.
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    mark = len(runtime.lines)
    ran = run_claude(runtime.url, "Use bash to show the date", args=["--allowedTools", "Bash"])
    assert ran.returncode == 0, (ran.stdout[-2000:], ran.stderr[-2000:])
    result = ran.result
    assert result["is_error"] is False and result["num_turns"] >= 2 and result["permission_denials"] == []
    first, second = runs(runtime, mark)[:2]
    assert [entry["role"] for entry in second["history"]][-2:] in (["assistant", "tool"], ["tool", "user"]), second["history"]
    # The command ran: its output ("command not found", exit code 127) came back as the tool's result.
    assert result["result"].startswith("Tool result: ")
