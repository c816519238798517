"""Malformed and hostile /v1/messages requests in the real runtime: every one a 4xx in
Anthropic's shape naming the field at fault, none reaching the model (the emulator logs
no `ai_run`), nothing of them copied into the logs, and the Worker serving on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.runtime import RuntimeOptions

CLAUDE = "claude-opus-5-5"
USER = [{"role": "user", "content": "hi"}]
TOOL = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
CALLED = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]}
TWO_CALLS = {"role": "assistant", "content": [*CALLED["content"],
                                              {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}}]}


def body(**fields: Any) -> dict[str, Any]:
    return {"model": CLAUDE, "max_tokens": 64, "messages": USER, **fields}


def result(tool_use_id: str = "toolu_1", **fields: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": "sunny", **fields}]}


REFUSED = [
    # The body and its top-level fields.
    pytest.param([1, 2], 400, None, id="not-an-object"),
    pytest.param({"model": CLAUDE, "messages": USER}, 400, "max_tokens", id="no-max-tokens"),
    pytest.param(body(max_tokens=0), 400, "max_tokens", id="zero-max-tokens"),
    pytest.param(body(max_tokens=True), 400, "max_tokens", id="boolean-max-tokens"),
    pytest.param(body(max_tokens=10**400), 400, "max_tokens", id="max-tokens-of-400-digits"),
    pytest.param(body(model=""), 400, "model", id="empty-model"),
    pytest.param(body(model="m" * 60_000), 404, "model", id="model-of-60k-chars"),
    pytest.param(body(messages=[]), 400, "messages", id="no-messages"),
    pytest.param(body(messages=[{"role": "user", "content": "x"}] * 5000), 400, "messages", id="5000-messages"),
    pytest.param(body(stream="yes"), 400, "stream", id="stream-not-a-boolean"),
    pytest.param(body(temperature=1e308), 400, "temperature", id="huge-temperature"),
    pytest.param(body(top_p=2), 400, "top_p", id="top-p-above-one"),
    pytest.param(body(top_k=-1), 400, "top_k", id="negative-top-k"),
    pytest.param(body(stop_sequences=["s" * 60_000]), 400, "stop_sequences", id="stop-of-60k-chars"),
    pytest.param(body(stop_sequences=[["nested"]]), 400, "stop_sequences", id="stop-not-strings"),
    pytest.param(body(metadata={"user_id": "u" * 60_000}), 400, "metadata.user_id", id="user-id-of-60k-chars"),
    pytest.param(body(thinking={"type": "sometimes"}), 400, "thinking.type", id="unknown-thinking"),
    pytest.param(body(thinking={"type": "enabled"}), 400, "thinking.budget_tokens", id="thinking-without-budget"),
    pytest.param(body(output_config={"effort": "extreme"}), 400, "output_config.effort", id="unknown-effort"),
    pytest.param(body(output_config={"format": {"type": "json_schema"}}), 400, "output_config.format", id="structured-output"),
    pytest.param(body(mcp_servers=[{"url": "https://example.com"}]), 400, "mcp_servers", id="mcp-servers"),
    pytest.param(body(system=[{"type": "image"}]), 400, "system[0]", id="system-not-text"),
    pytest.param(body(system=12), 400, "system", id="system-a-number"),
    # Blocks and roles.
    pytest.param(body(messages=[{"role": "robot", "content": "hi"}]), 400, "messages[0].role", id="unknown-role"),
    pytest.param(body(messages=[{"role": "user", "content": 5}]), 400, "messages[0].content", id="content-a-number"),
    pytest.param(body(messages=[{"role": "user", "content": [{"type": "video"}]}]), 400, "messages[0].content[0].type", id="unknown-block"),
    pytest.param(body(messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}]), 400, "messages[0].content[0].text",
                 id="text-not-a-string"),
    pytest.param(body(messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "file"}}]}]), 400,
                 "messages[0].content[0].source.type", id="image-from-a-file"),
    pytest.param(body(messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                                          "data": "bm90IGFuIGltYWdl"}}]}]),
                 400, "messages[0].content[0]", id="image-not-an-image"),
    pytest.param(body(messages=[{"role": "user", "content": "   "}]), 400, "messages[0].content", id="only-whitespace"),
    pytest.param(body(messages=[*USER, {"role": "assistant", "content": "prefill"}]), 400, "messages", id="last-is-assistant"),
    pytest.param(body(messages=[{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "x"}]}, *USER]),
                 400, "messages[0].content[0].input", id="tool-input-not-an-object"),
    pytest.param(body(messages=[{"role": "assistant", "content": [{"type": "image"}]}, *USER]), 400, "messages[0].content[0].type",
                 id="image-from-the-assistant"),
    # Tool pairing.
    pytest.param(body(messages=[*USER, CALLED, result("toolu_other")]), 400, "messages[2]", id="result-of-no-call"),
    pytest.param(body(messages=[result()]), 400, "messages[0]", id="result-before-any-call"),
    pytest.param(body(messages=[*USER, CALLED, {"role": "user", "content": [{"type": "text", "text": "and"},
                                                                              result()["content"][0]]}]),
                 400, "messages[2].content[1]", id="result-after-text"),
    pytest.param(body(messages=[*USER, CALLED, result(is_error="yes")]), 400, "messages[2].content[0].is_error", id="is-error-not-a-boolean"),
    pytest.param(body(messages=[*USER, CALLED, result(content=[{"type": "video"}])]), 400, "messages[2].content[0].content[0]",
                 id="result-of-an-unknown-block"),
    # Found by a review's attack (2026-12-04): each a 200 that reached the model, or a name
    # the client never sent.
    pytest.param(body(messages=[*USER, TWO_CALLS, result("toolu_1")]), 400, "messages[2]", id="a-call-left-unanswered"),
    pytest.param(body(messages=[*USER, CALLED, {"role": "user", "content": "and?"}]), 400, "messages[2]", id="text-instead-of-results"),
    pytest.param(body(messages=[*USER, CALLED, {"role": "user", "content": [*result()["content"], *result()["content"]]}]), 400,
                 "messages[2]", id="one-call-answered-twice"),
    pytest.param(body(messages=[*USER, {"role": "assistant", "content": [{"type": "tool_use", "id": "", "name": "f", "input": {}}]},
                                result("")]), 400, "messages[1].content[0].id", id="empty-tool-use-id"),
    pytest.param(body(messages=[*USER, CALLED, result("t" * 300)]), 400, "messages[2].content[0].tool_use_id", id="tool-use-id-of-300"),
    pytest.param(body(tools=[{"type": "typo", **TOOL}]), 400, "tools[0].type", id="unknown-tool-type"),
    pytest.param(body(tools=[{"name": "f", "input_schema": {"type": "object", "maximum": 10**309}}]), 400, "tools[0].input_schema",
                 id="schema-number-past-doubles"),
    pytest.param(body(metadata=["user"]), 400, "metadata", id="metadata-a-list"),
    pytest.param(body(thinking={"type": "adaptive", "display": "loud"}), 400, "thinking.display", id="unknown-display"),
    pytest.param(body(output_config="high"), 400, "output_config", id="output-config-a-string"),
    pytest.param(body(messages=[*USER, TWO_CALLS, *USER]), 400, "messages[2]", id="calls-then-a-question"),
    pytest.param(body(messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "eA=="}}]}]), 400,
                 "messages[0].content[0].source", id="image-without-media-type"),
    pytest.param(body(messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": 5}}]}]), 400,
                 "messages[0].content[0].source.url", id="image-url-a-number"),
    pytest.param(body(messages=[*USER, CALLED, result(content=5)]), 400, "messages[2].content[0].content", id="result-a-number"),
    pytest.param(body(messages=[*USER, {"role": "assistant", "content": [*CALLED["content"], *CALLED["content"]]}, result()]), 400,
                 "messages[1].content[1].id", id="tool-use-id-twice"),
    pytest.param(body(tools=["get_weather"]), 400, "tools[0]", id="tool-a-string"),
    pytest.param(body(messages=[*USER, CALLED]), 400, "messages", id="calls-last"),
    # Tools.
    pytest.param(body(tools={"name": "f"}), 400, "tools", id="tools-not-a-list"),
    pytest.param(body(tools=[TOOL] * 65), 400, "tools", id="65-tools"),
    pytest.param(body(tools=[{**TOOL, "name": "f" * 50_000}]), 400, "tools[0].name", id="huge-tool-name"),
    pytest.param(body(tools=[{**TOOL, "description": "d" * 100_000}]), 400, "tools[0].description", id="huge-description"),
    pytest.param(body(tools=[{"name": "f", "input_schema": "object"}]), 400, "tools[0].input_schema", id="schema-not-an-object"),
    pytest.param(body(tools=[{"name": "f", "input_schema": {"a": [[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}}]), 400,
                 "tools[0].input_schema", id="schema-too-deep"),
    pytest.param(body(tools=[TOOL, TOOL]), 400, "tools[1].name", id="duplicate-tool"),
    pytest.param(body(tools=[TOOL], tool_choice={"type": "tool", "name": "other"}), 400, "tool_choice.name", id="choice-of-no-tool"),
    pytest.param(body(tools=[TOOL], tool_choice={"type": "sometimes"}), 400, "tool_choice.type", id="unknown-choice"),
    pytest.param(body(tools=[TOOL], tool_choice={"type": "auto", "disable_parallel_tool_use": "no"}), 400,
                 "tool_choice.disable_parallel_tool_use", id="parallel-not-a-boolean"),
]


@pytest.mark.parametrize(("payload", "status", "field"), REFUSED)
async def test_every_malformed_request_is_a_4xx_in_anthropics_shape_and_never_reaches_the_model(start_runtime, http, payload, status, field):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/v1/messages", json=payload)
    assert response.status_code == status, response.text[:300]
    refusal = response.json()
    assert refusal["type"] == "error" and set(refusal) == {"type", "error"}
    assert refusal["error"]["type"] == ("not_found_error" if status == 404 else "invalid_request_error")
    if field is not None:
        assert field in refusal["error"]["message"], refusal["error"]["message"]
    assert response.headers["x-request-id"]
    runtime.wait_until_quiet()
    assert not [record for record in runtime.records(mark) if record["event"] == "ai_run"], "nothing reached the model"
    logged = "\n".join(runtime.own_lines(mark))
    assert "u" * 100 not in logged and "d" * 100 not in logged and "s" * 100 not in logged and len(logged) < 5000
    served = await http.post(runtime.url + "/v1/messages", json=body())
    assert served.status_code == 200 and served.json()["type"] == "message"


async def test_a_body_past_the_limit_is_request_too_large(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    response = await http.post(runtime.url + "/v1/messages", json=body(messages=[{"role": "user", "content": "x" * (3 << 20)}]))
    assert response.status_code == 413 and response.json()["error"]["type"] == "request_too_large"


async def test_other_methods_and_media_types_are_refused_in_anthropics_shape(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    wrong_method = await http.get(runtime.url + "/v1/messages")
    assert wrong_method.status_code == 405 and wrong_method.json()["error"]["type"] == "invalid_request_error"
    wrong_type = await http.post(runtime.url + "/v1/messages", content=b"{}", headers={"content-type": "text/plain"})
    assert wrong_type.status_code == 415 and wrong_type.json()["type"] == "error"
    nowhere = await http.post(runtime.url + "/v1/messages/batches", json=body())
    assert nowhere.status_code == 404 and nowhere.json()["error"]["type"] == "not_found_error"


CLAUDE_CODE_LIKE = body(
    max_tokens=128_000, stream=True,
    system=[{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328"},
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
    messages=[{"role": "user", "content": [{"type": "text", "text": "<system-reminder>hi</system-reminder>"}, {"type": "text", "text": "say hi"}]},
              {"role": "system", "content": [{"type": "text", "text": "Environment: linux", "cache_control": {"type": "ephemeral"}}],
               "output_config": {"effort": "medium"}},
              {"role": "system", "content": []}],
    tools=[{**TOOL, "defer_loading": True, "cache_control": {"type": "ephemeral"}},
           {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}],
    thinking={"type": "adaptive", "display": "omitted"}, metadata={"user_id": '{"device_id":"abc","session_id":"def"}'},
    context_management={"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}, output_config={"effort": "medium"},
)


async def test_a_request_shaped_as_claude_codes_first_is_answered(start_runtime, http):
    # Claude Code 2.1.328's fields (docs/anthropic.md): system blocks, system-role messages
    # with their own output_config (one of them empty), cache_control, a deferred tool, a
    # server tool (left out), adaptive thinking it does not display, context_management.
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    response = await http.post(runtime.url + "/v1/messages", json=CLAUDE_CODE_LIKE, headers={"anthropic-version": "2023-06-01",
                                                                                             "anthropic-beta": "claude-code-20250219"})
    assert response.status_code == 200, response.text[:300]
    assert response.text.startswith("event: message_start\n") and response.text.rstrip().endswith('data: {"type":"message_stop"}')
    assert "thinking" not in response.text
