"""A Messages request (chat.api.anthropic) as the ChatTurn every surface hands on: the
blocks as the binding's messages, the controls as its inputs, and any body at all either a
turn or an ApiError naming the field (never another exception)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chat.api.anthropic import anthropic_error_body, count_tokens, validate_count, validate_messages
from chat.config import Config
from chat.web.errors import ApiError
from tests.anthropic_api.test_messages_hostile import REFUSED

GLM = "@cf/zai-org/glm-4.7-flash"
GEMMA = "@cf/google/gemma-4-26b-a4b-it"
CONFIG = Config(model=GLM)
TOOL = {"name": "get_weather", "description": "The weather.", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def request(**fields: Any) -> dict[str, Any]:
    return {"model": "claude-opus-5-5", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], **fields}


def test_a_claude_models_name_is_answered_by_the_workers_models_and_a_served_one_by_itself():
    assert validate_messages(request(), CONFIG).turn.models == ()  # MODEL's order
    assert validate_messages(request(model=GLM), CONFIG).turn.models[0] == GLM
    with pytest.raises(ApiError) as unknown:
        validate_messages(request(model="gpt-5"), CONFIG)
    assert unknown.value.code == "model_not_found"


def test_the_system_prompt_and_claude_codes_system_messages_are_one_system_message_first():
    turn = validate_messages(request(system=[{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}],
                                     messages=[{"role": "user", "content": "hi"}, {"role": "system", "content": "Env: linux"},
                                               {"role": "system", "content": []}]), CONFIG).turn
    assert turn.messages[0] == {"role": "system", "content": "Be brief.\n\nBe kind.\n\nEnv: linux"}
    assert [message["role"] for message in turn.messages] == ["system", "user"]


def test_a_tool_round_trip_is_the_binding_shape_with_results_as_tool_messages():
    messages = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "sig"}, {"type": "text", "text": "Let me look."},
                                          {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "sunny"}]},
                                     {"type": "text", "text": "and tomorrow?"}]},
    ]
    turn = validate_messages(request(messages=messages, tools=[TOOL], tool_choice={"type": "any", "disable_parallel_tool_use": True}),
                             CONFIG).turn
    assert turn.messages[1] == {"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]}
    assert turn.messages[2]["role"] == "tool" and turn.messages[2]["content"] == "sunny" and turn.messages[2]["tool_call_id"] == "toolu_1"
    assert turn.messages[3] == {"role": "user", "content": "and tomorrow?"}
    assert turn.tool_inputs["tool_choice"] == "required" and turn.tool_inputs["parallel_tool_calls"] is False
    assert turn.tool_inputs["tools"][0]["function"]["parameters"] == TOOL["input_schema"]


def test_a_failed_tool_result_says_so_in_its_text():
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "get_weather", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "boom", "is_error": True}]}]
    assert validate_messages(request(messages=messages, tools=[TOOL]), CONFIG).turn.messages[-1]["content"] == "Error: boom"


@pytest.mark.parametrize(("thinking", "config", "effort", "shown"), [
    (None, None, None, False),
    ({"type": "enabled", "budget_tokens": 1024}, None, "low", True),
    ({"type": "enabled", "budget_tokens": 4096}, None, "medium", True),
    ({"type": "enabled", "budget_tokens": 32000}, None, "high", True),
    ({"type": "disabled"}, {"effort": "high"}, "none", False),
    ({"type": "adaptive", "display": "omitted"}, {"effort": "medium"}, "medium", False),
    ({"type": "adaptive"}, {"effort": "max"}, "xhigh", True),
])
def test_thinking_and_effort_are_the_reasoning_controls(thinking, config, effort, shown):
    fields = {key: value for key, value in (("thinking", thinking), ("output_config", config)) if value is not None}
    checked = validate_messages(request(**fields), CONFIG)
    assert (checked.turn.reasoning_effort, checked.thinking) == (effort, shown)


def test_a_budget_above_the_workers_is_lowered_and_the_rest_carried():
    checked = validate_messages(request(max_tokens=128_000, stream=True, temperature=0.5, top_p=0.9, top_k=40, stop_sequences=["END"]), CONFIG)
    turn = checked.turn
    assert (turn.max_tokens, turn.temperature, dict(turn.options), turn.stop, checked.stream) == (CONFIG.max_tokens, 0.5, {"top_p": 0.9},
                                                                                                  ("END",), True)


def test_images_become_the_image_parts_the_images_path_reads():
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    messages = [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
                                             {"type": "text", "text": "what is it?"}]}]
    turn = validate_messages(request(messages=messages), Config(model=GLM, fallback_models=(GEMMA,))).turn
    assert turn.models[0] == GEMMA  # the vision model, as for an image on /v1
    parts = turn.messages[-1]["content"]
    assert [part["type"] for part in parts] == ["image_url", "text"] and parts[0]["image_url"]["url"].startswith("data:image/png;base64,")


def test_a_system_prompt_is_refused_where_the_server_alone_sets_it():
    closed = Config(model=GLM, openai_system_messages=False)
    for fields, named in (({"system": "be brief"}, "system"),
                          ({"messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "env"}]}, "messages[1].role")):
        with pytest.raises(ApiError) as refused:
            validate_messages(request(**fields), closed)
        assert refused.value.param == named and "set by the server" in refused.value.message


def test_an_image_counts_as_many_tokens_as_anthropic_counts_for_a_large_one():
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    counted = count_tokens(validate_count({"model": "claude-opus-5-5", "messages": [{"role": "user", "content": [image]}]},
                                          Config(model=GEMMA)))
    assert 1_600 <= counted["input_tokens"] < 1_610  # the image, and the message around it


def test_count_tokens_counts_the_system_prompt_messages_and_tools():
    small = count_tokens(validate_count({"model": "claude-opus-5-5", "messages": [{"role": "user", "content": "hi"}]}, CONFIG))
    large = count_tokens(validate_count({"model": "claude-opus-5-5", "system": "s" * 600, "tools": [TOOL],
                                         "messages": [{"role": "user", "content": "w" * 6000}]}, CONFIG))
    assert small == {"input_tokens": 1} and 1000 < large["input_tokens"] < 1200


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
FIELDS = st.sampled_from(["model", "max_tokens", "messages", "system", "tools", "tool_choice", "thinking", "output_config", "metadata",
                          "stop_sequences", "temperature", "top_p", "top_k", "stream", "mcp_servers"])
BLOCK = st.fixed_dictionaries({"type": st.sampled_from(["text", "image", "tool_use", "tool_result", "thinking", "video"])},
                              optional={"text": JSON, "source": JSON, "id": JSON, "name": JSON, "input": JSON, "tool_use_id": JSON,
                                        "content": JSON, "is_error": JSON})
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "tool"]),
                                 "content": st.text(max_size=8) | st.lists(BLOCK, max_size=3) | JSON})


@given(st.dictionaries(FIELDS, JSON, max_size=6), st.lists(MESSAGE, min_size=1, max_size=4))
def test_any_request_is_a_turn_or_an_api_error_naming_its_field(fields, messages):
    payload = {**request(messages=messages), **fields}
    try:
        checked = validate_messages(payload, CONFIG)
    except ApiError as error:
        assert error.status in (400, 404) and error.message
        json.dumps({"message": error.message, "param": error.param})
    else:
        assert checked.turn.messages[-1]["role"] in ("user", "tool")


@pytest.mark.parametrize(("payload", "status", "field"), REFUSED)
def test_every_refusal_of_the_runtime_suite_names_its_field_on_cpython_too(payload, status, field):
    # The malformed requests of tests/anthropic_api/test_messages_hostile.py, checked here
    # where coverage sees them (that suite proves the same answers in workerd). The body
    # limit is the route's, not the parser's.
    with pytest.raises(ApiError) as refused:
        validate_messages(payload, CONFIG)
    assert refused.value.status == status and (field is None or field in refused.value.message)
    assert json.loads(anthropic_error_body(refused.value, "r1"))["error"]["message"] == refused.value.message


def test_what_is_accepted_and_left_out():
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    url_image = {"type": "image", "source": {"type": "url", "url": f"data:image/png;base64,{png}"}}
    messages = [{"role": "user", "content": [url_image, {"type": "text", "text": "and?"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "get_weather", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "image", "source": {}}]}]}]
    tools = [TOOL, {"type": "web_search_20250305", "name": "web_search"}]
    turn = validate_messages(request(messages=messages, tools=tools, tool_choice={"type": "tool", "name": "get_weather"}),
                             Config(model=GEMMA)).turn
    assert [tool["function"]["name"] for tool in turn.tool_inputs["tools"]] == ["get_weather"]
    assert turn.tool_inputs["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert turn.messages[0]["content"][0]["type"] == "image_url" and "image" in turn.messages[-1]["content"]
    assert validate_messages(request(tool_choice={"type": "none"}), CONFIG).turn.tool_inputs == {}
    with pytest.raises(ApiError, match="JSON object"):
        validate_count([1], CONFIG)
