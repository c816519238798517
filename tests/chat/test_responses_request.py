"""The Responses API's request checks (chat.api.responses) on CPython: what each input item
becomes, which tools are offered under which names, what is left out, and every refusal
naming the field as the client sent it."""

from __future__ import annotations

from typing import Any

import pytest

from chat.api.responses import validate_responses
from chat.config import Config
from chat.model.call import session_key
from chat.web.errors import ApiError
from tests.image_files import png

MODEL = "@cf/zai-org/glm-4.7-flash"
CONFIG = Config(model=MODEL, fallback_models=("@cf/google/gemma-4-26b-a4b-it",))
FUNCTION = {"type": "function", "name": "now", "description": "The time.", "parameters": {"type": "object", "properties": {}}}


def checked(config: Config = CONFIG, **fields: Any):
    return validate_responses({"model": MODEL, **fields}, config)


def refusal(config: Config = CONFIG, **fields: Any) -> ApiError:
    with pytest.raises(ApiError) as raised:
        validate_responses({"model": MODEL, **fields} if "model" not in fields else fields, config)
    return raised.value


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": list(parts)}


def text(value: str) -> dict[str, str]:
    return {"type": "input_text", "text": value}


def test_a_string_input_is_one_user_message_and_instructions_a_system_message_before_it():
    request = checked(input="Hi", instructions="Be brief.")
    assert request.turn.messages == ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"})
    assert (request.stream, request.obfuscation, request.reasoning_summary) == (False, True, False)
    # Stored unless told not to, as on OpenAI's API (issue 40: the AI SDK counts on it).
    assert request.echo["instructions"] == "Be brief." and request.echo["store"] is True and request.store
    assert checked(input="Hi", instructions="  ").turn.messages == ({"role": "user", "content": "Hi"},)


def test_items_become_the_chat_history_with_calls_joined_and_reasoning_left_out():
    request = checked(tools=[FUNCTION], input=[
        {"role": "developer", "content": [text("Rules.")]},
        {"role": "system", "content": "More rules."},
        {"role": "system", "content": " "},  # blank: left out
        {"role": "assistant", "content": None},
        user(text("What time"), text("is it?")),
        {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "Hm."}],
         "encrypted_content": None},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."},
                                                             {"type": "refusal", "refusal": "No."}]},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "now", "arguments": "{}", "status": "completed"},
        {"type": "function_call", "call_id": "c2", "name": "now", "arguments": "not json"},
        {"type": "function_call_output", "call_id": "c2", "output": [text("12:00"), text("UTC")]},
        {"type": "function_call_output", "call_id": "c1", "output": "11:00"},
        {"type": "function_call", "call_id": "c3", "name": "now", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c3", "output": "13:00"},
    ])
    assert request.turn.messages == (
        {"role": "system", "content": "Rules."},
        {"role": "system", "content": "More rules."},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "What time\nis it?"},
        {"role": "assistant", "content": "Let me look.\nNo.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "name": "now", "content": "12:00\nUTC"},
        {"role": "tool", "tool_call_id": "c1", "name": "now", "content": "11:00"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c3", "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c3", "name": "now", "content": "13:00"},
    )


def test_an_input_image_is_an_image_part_for_a_model_that_sees():
    url = "data:image/png;base64," + __import__("base64").b64encode(png(3, 2)).decode()
    request = validate_responses({"input": [user(text("What?"), {"type": "input_image", "image_url": url, "detail": "low"})],
                                  "model": "@cf/google/gemma-4-26b-a4b-it"}, CONFIG)
    [message] = request.turn.messages
    assert message["content"][1] == {"type": "image_url", "image_url": {"url": url}}


def test_namespace_tools_are_offered_flat_and_hosted_and_custom_tools_are_left_out():
    namespace = {"type": "namespace", "name": "agents", "description": "Agents.", "tools": [
        {**FUNCTION, "name": "spawn", "description": "d" * 6000}, {"type": "custom", "name": "patch"}]}
    request = checked(input="hi", tools=[FUNCTION, namespace, {"type": "web_search", "external_web_access": False},
                                         {"type": "custom", "name": "apply_patch"}],
                      tool_choice={"type": "function", "name": "spawn", "namespace": "agents"}, parallel_tool_calls=False)
    offered = [tool["function"]["name"] for tool in request.turn.tool_inputs["tools"]]
    assert offered == ["now", "agents__spawn"] and request.names == {"agents__spawn": ("agents", "spawn")}
    assert request.turn.tool_inputs["tool_choice"] == {"type": "function", "function": {"name": "agents__spawn"}}
    assert request.turn.tool_inputs["parallel_tool_calls"] is False
    assert checked(input="hi", tools=[FUNCTION], tool_choice={"type": "function", "name": "now"}).turn.tool_inputs["tool_choice"] == \
        {"type": "function", "function": {"name": "now"}}
    assert checked(input="hi", tools=[FUNCTION], tool_choice="required").turn.tool_inputs["tool_choice"] == "required"


def test_a_namespaced_call_in_the_history_is_sent_under_its_flat_name():
    namespace = {"type": "namespace", "name": "agents", "description": "", "tools": [{**FUNCTION, "name": "spawn"}]}
    history = [user(text("go")), {"type": "function_call", "call_id": "c", "name": "spawn", "namespace": "agents", "arguments": "{}"},
               {"type": "function_call_output", "call_id": "c", "output": "ok"},
               {"type": "function_call", "call_id": "d", "name": "gone", "namespace": "old", "arguments": "{}"},
               {"type": "function_call_output", "call_id": "d", "output": "ok"}]
    messages = checked(input=history, tools=[namespace]).turn.messages
    assert messages[1]["tool_calls"][0]["function"]["name"] == "agents__spawn"
    assert messages[3]["tool_calls"][0]["function"]["name"] == "old__gone"  # a namespace no longer offered


def test_with_nothing_to_call_auto_none_and_parallel_tool_calls_ask_nothing():
    # The Agents SDK sends tool_choice without tools; Codex CLI parallel_tool_calls beside web_search alone.
    for fields in ({"tool_choice": "auto", "parallel_tool_calls": True}, {"tools": [], "tool_choice": "none"},
                   {"tools": [{"type": "web_search"}], "parallel_tool_calls": False}):
        request = checked(input="hi", **fields)
        assert request.turn.tool_inputs == {} and request.echo["tools"] == [] and request.echo["tool_choice"] == "auto"


def test_the_other_fields_are_carried_over():
    request = checked(input="hi", max_output_tokens=100, temperature=0.5, top_p=0.9, reasoning={"effort": "low", "summary": "auto"},
                      text={"format": {"type": "json_schema", "name": "answer", "strict": True, "schema": {
                          "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}}},
                      metadata={"k": "v"}, prompt_cache_key="session-1", stream=True, stream_options={"include_obfuscation": False},
                      store=True, include=["reasoning.encrypted_content"], truncation="disabled", background=False,
                      service_tier="auto", user="u", client_metadata={"x": "y"})
    turn = request.turn
    assert (turn.max_tokens, turn.temperature, turn.options, turn.reasoning_effort) == (100, 0.5, (("top_p", 0.9),), "low")
    assert turn.output is not None and turn.output.kind == "json_schema" and turn.output.strict and turn.output.name == "answer"
    assert (request.stream, request.obfuscation, request.reasoning_summary) == (True, False, True)
    assert request.echo["metadata"] == {"k": "v"} and turn.cache_key == "session-1"
    assert checked(input="hi", text={"format": {"type": "json_object"}}).turn.output.kind == "json_object"
    assert checked(input="hi", text={"verbosity": "low"}).turn.output is None
    assert checked(input="hi", reasoning={"generate_summary": "concise"}).reasoning_summary is True


def test_the_prompt_cache_key_is_the_session_whatever_the_conversation():
    one = checked(input="first question", prompt_cache_key="k").turn
    other = checked(input="another opening", prompt_cache_key="k").turn
    assert session_key(one, "client") == session_key(other, "client") != session_key(one, "another client")


def test_a_turn_too_large_for_the_named_model_is_refused_with_its_bounds():
    # Its page states no context window: 8,192 tokens are assumed, 49,152 characters.
    small = "@cf/meta/llama-3.1-8b-instruct-fast"
    config = Config(model=small)
    assert checked(config, model=small, input="x" * 49_152).turn.models == (small,)
    error = refusal(config, model=small, input="x" * 49_153)
    assert error.param == "input" and "at most 256 messages and 49152 characters" in error.message


@pytest.mark.parametrize(("fields", "code", "param"), [
    ({"input": "hi", "previous_response_id": "resp_1"}, "previous_response_not_found", "previous_response_id"),
    ({"input": "hi", "background": True, "store": False}, "invalid_request", "background"),
    ({"input": "hi", "background": "yes"}, "invalid_request", "background"),
    ({"input": "hi", "conversation": "conv_1"}, "conversation_not_found", "conversation"),  # resolved before: one left was not found
    ({"input": "hi", "prompt": {"id": "p"}}, "invalid_request", "prompt"),
    ({"input": "hi", "truncation": "auto"}, "invalid_request", "truncation"),
    ({"input": "hi", "store": "yes"}, "invalid_request", "store"),
    ({"input": "hi", "include": "all"}, "invalid_request", "include"),
    ({"input": "hi", "include": [1]}, "invalid_request", "include"),
    ({"input": "hi", "tools": {}}, "invalid_request", "tools"),
    ({"input": "hi", "tools": [FUNCTION] * 65}, "invalid_request", "tools"),
    ({"input": "hi", "tools": ["x"]}, "invalid_request", "tools[0].type"),
    ({"input": "hi", "tools": [{"type": "hologram"}]}, "invalid_request", "tools[0].type"),
    ({"input": "hi", "tools": [{"type": "namespace", "name": 5, "description": "", "tools": []}]}, "invalid_request", "tools[0].name"),
    ({"input": "hi", "tools": [{"type": "namespace", "name": "", "description": "", "tools": []}]}, "invalid_request", "tools[0].name"),
    ({"input": "hi", "tools": [{"type": "namespace", "name": "n", "tools": []}]}, "invalid_request", "tools[0].description"),
    ({"input": "hi", "tools": [{"type": "namespace", "name": "n", "description": "", "tools": [{"type": "function", "name": 5}]}]},
     "invalid_request", "tools[0].tools[0].name"),
    ({"input": "hi", "tools": [{"type": "namespace", "name": "n", "description": "", "tools": [FUNCTION]}],
      "tool_choice": {"type": "function", "name": "now", "namespace": "m"}}, "invalid_request", "tool_choice.name"),
    ({"input": [user({"type": "input_text", "text": 5})]}, "invalid_request", "input[0].content[0].text"),
    ({"input": "hi", "tools": [{"type": "namespace", "name": "n", "description": "", "tools": [FUNCTION] * 65}]}, "invalid_request", "tools[0].tools"),
    ({"input": "hi", "tools": [{"type": "namespace", "name": "n", "description": "", "tools": [{"type": "web_search"}]}]}, "invalid_request",
     "tools[0].tools[0].type"),
    ({"input": "hi", "tools": [{"type": "namespace", "name": "n", "description": "", "tools": [FUNCTION] * 40},
                               {"type": "namespace", "name": "m", "description": "", "tools": [FUNCTION] * 40}]}, "invalid_request", "tools"),
    ({"input": "hi", "tools": [{**FUNCTION, "parameters": "x"}]}, "invalid_request", "tools[0].parameters"),
    ({"input": "hi", "tools": [{**FUNCTION, "description": 5}]}, "invalid_request", "tools[0].description"),
    ({"input": "hi", "tools": [FUNCTION], "tool_choice": {"type": "function", "name": "later"}}, "invalid_request", "tool_choice.name"),
    ({"input": "hi", "tools": [FUNCTION], "tool_choice": {"type": "web_search"}}, "invalid_request", "tool_choice"),
    ({"input": "hi", "tools": [FUNCTION], "tool_choice": "any"}, "invalid_request", "tool_choice"),
    ({"input": "hi", "tool_choice": "required"}, "invalid_request", "tool_choice"),
    ({"input": "hi", "tools": [{"type": "web_search"}], "tool_choice": {"type": "function", "name": "now"}}, "invalid_request",
     "tool_choice.name"),
    ({"input": "hi", "parallel_tool_calls": "yes"}, "invalid_request", "parallel_tool_calls"),
    ({"input": "hi", "text": 5}, "invalid_request", "text"),
    ({"input": "hi", "text": {"format": 5}}, "invalid_request", "text.format"),
    ({"input": "hi", "text": {"format": {"type": "xml"}}}, "invalid_request", "text.format.type"),
    ({"input": "hi", "text": {"format": {"type": "json_schema", "name": "bad name", "schema": {"type": "object"}}}}, "invalid_request",
     "text.format.name"),
    ({"input": "hi", "reasoning": "high"}, "invalid_request", "reasoning"),
    ({"input": "hi", "reasoning": {"effort": "extreme"}}, "invalid_request", "reasoning.effort"),
    ({"input": "hi", "reasoning": {"summary": "short"}}, "invalid_request", "reasoning.summary"),
    ({"input": "hi", "max_output_tokens": 0}, "invalid_request", "max_output_tokens"),
    ({"input": "hi", "max_output_tokens": 5000}, "invalid_request", "max_output_tokens"),
    ({"input": "hi", "top_p": 2}, "invalid_request", "top_p"),
    ({"input": "hi", "metadata": []}, "invalid_request", "metadata"),
    ({"input": "hi", "metadata": {str(i): "v" for i in range(17)}}, "invalid_request", "metadata"),
    ({"input": "hi", "metadata": {"k" * 65: "v"}}, "invalid_request", "metadata"),
    ({"input": "hi", "metadata": {"k": 1}}, "invalid_request", "metadata"),
    ({"input": "hi", "prompt_cache_key": ""}, "invalid_request", "prompt_cache_key"),
    ({"input": "hi", "stream": 1}, "invalid_request", "stream"),
    ({"input": "hi", "stream_options": {"include_obfuscation": False}}, "invalid_request", "stream_options"),
    ({"input": "hi", "stream": True, "stream_options": []}, "invalid_request", "stream_options"),
    ({"input": "hi", "stream": True, "stream_options": {"include_obfuscation": "no"}}, "invalid_request", "stream_options.include_obfuscation"),
    ({"input": "hi", "instructions": ["x"]}, "invalid_request", "instructions"),
    ({"input": None}, "invalid_request", "input"),
    ({"input": []}, "invalid_request", "input"),
    ({"input": [5]}, "invalid_request", "input[0]"),
    ({"input": [{"role": "system", "content": "only rules"}]}, "invalid_request", "input"),
    ({"input": [{"role": "critic", "content": "x"}]}, "invalid_request", "input[0].role"),
    ({"input": [{"role": "user", "content": 5}]}, "invalid_request", "input[0].content"),
    ({"input": [{"role": "user", "content": "  "}]}, "invalid_request", "input[0].content"),
    ({"input": [user({"type": "input_file", "file_id": "f"})]}, "invalid_request", "input[0].content[0]"),
    ({"input": [user({"type": "input_image", "file_id": "f"})]}, "invalid_request", "input[0].content[0].file_id"),
    ({"input": [user({"type": "input_image", "image_url": "https://example.com/a.png"})]}, "invalid_request", "input[0].content[0]"),
    ({"input": [{"role": "assistant", "content": 5}, user(text("hi"))]}, "invalid_request", "input[0].content"),
    ({"input": [{"role": "assistant", "content": [{"type": "input_image"}]}, user(text("hi"))]}, "invalid_request", "input[0].content[0]"),
    ({"input": [{"role": "developer", "content": [{"type": "output_text", "text": "x"}]}, user(text("hi"))]}, "invalid_request",
     "input[0].content[0]"),
    ({"input": [user(text("hi")), {"type": "function_call", "call_id": "", "name": "f", "arguments": "{}"}]}, "invalid_request",
     "input[1].call_id"),
    ({"input": [user(text("hi")), {"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]}, "invalid_request",
     "input[1].arguments"),
    ({"input": [user(text("hi")), {"type": "function_call", "call_id": "c", "name": "f", "namespace": 5, "arguments": "{}"}]},
     "invalid_request", "input[1].namespace"),
    ({"input": [user(text("hi")), *[{"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"} for i in range(129)]]},
     "invalid_request", "input[129]"),
    ({"input": [user(text("hi")), {"type": "function_call_output", "call_id": "c", "output": "x"}]}, "invalid_request", "input[1].call_id"),
    ({"input": [user(text("hi")), {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": 5}]}, "invalid_request", "input[2].output"),
    ({"input": [user(text("hi")), {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": [{"type": "input_image"}]}]}, "invalid_request",
     "input[2].output[0]"),
    ({"input": [user(text("hi")), {"type": "item_reference", "id": "x"}]}, "invalid_request", "input[1].type"),
    ({"input": [user(text("hi")), {"type": "web_search_call", "id": "x"}]}, "invalid_request", "input[1].type"),
    ({"model": 5, "input": "hi"}, "invalid_request", "model"),
    ({"model": "@cf/other/model", "input": "hi"}, "model_not_found", "model"),
])
def test_a_bad_request_is_refused_naming_the_field_as_sent(fields, code, param):
    error = refusal(**fields)
    assert error.code == code
    if param is not None:
        assert error.param == param, error.message


def test_the_response_repeats_only_what_was_checked_in_openais_shapes():
    from openai.types.responses import Response

    namespace = {"type": "namespace", "name": "agents", "description": "Agents.", "tools": [{**FUNCTION, "name": "spawn"}]}
    request = checked(input="hi", tools=[{"type": "mcp", "server_label": "x"}, FUNCTION, namespace, {"type": "web_search"}],
                      tool_choice={"type": "function", "name": "spawn", "namespace": "agents"}, text={"verbosity": "loud"},
                      reasoning={"effort": "low", "summary": "auto", "context": "all_turns"}, temperature=0.3)
    echo = request.echo
    assert [(tool["type"], tool["name"]) for tool in echo["tools"]] == [("function", "now"), ("namespace", "agents")]
    assert echo["tools"][1]["tools"][0]["name"] == "spawn" and echo["tool_choice"] == {"type": "function", "name": "spawn",
                                                                                       "namespace": "agents"}
    assert echo["text"] == {"format": {"type": "text"}} and echo["reasoning"] == {"effort": "low", "summary": "auto"}
    Response.model_validate({"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": MODEL,
                             "output": [], "error": None, "incomplete_details": None, **echo})
    strict = checked(input="hi", text={"format": {"type": "json_schema", "name": "a", "strict": True, "schema": {
        "type": "object", "properties": {}, "required": [], "additionalProperties": False}}}).echo["text"]
    assert strict["format"]["type"] == "json_schema" and strict["format"]["strict"] is True
    assert checked(input="hi", text={"format": {"type": "json_object"}}).echo["text"] == {"format": {"type": "json_object"}}


def test_not_an_object_and_too_many_items_are_refused():
    with pytest.raises(ApiError):
        validate_responses([], CONFIG)
    few = Config(model=MODEL, max_messages=2)
    assert refusal(few, input=["a", "b", "c"]).param == "input"
    strict = Config(model=MODEL, openai_system_messages=False)
    assert refusal(strict, input="hi", instructions="x").param == "instructions"
    assert refusal(strict, input=[{"role": "system", "content": "x"}, user(text("hi"))]).param == "input[0].role"
