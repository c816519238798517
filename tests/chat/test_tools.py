"""The request side of tool calling (issue 17, "Request fields") on CPython: every bound
at and just over it, every refusal naming its field, the history and UI conversions into
the binding's messages, and which models may answer a request with tools."""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat.api import tools
from chat.api.openai import validate_completion
from chat.api.validation import validate_chat, validate_ui_chat
from chat.config import Config
from chat.model import catalog
from chat.model.call import ModelCall, model_call, session_key
from chat.web.errors import ApiError

GLM = "@cf/zai-org/glm-4.7-flash"  # takes tools
LLAMA_33 = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # takes tools
GRANITE = "@cf/ibm-granite/granite-4.0-h-micro"  # does not
LLAMA_31 = "@cf/meta/llama-3.1-8b-instruct-fast"  # does not
CONFIG = Config(model=GLM, fallback_models=(GRANITE, LLAMA_33, LLAMA_31), max_tokens=100, max_messages=8, max_input_chars=600_000)
USER = {"role": "user", "content": "What time is it in Paris?"}


def tool(name: str = "current_time", **function) -> dict:
    return {"type": "function", "function": {"name": name, **function}}


def call(call_id: str = "call_1", name: str = "current_time", arguments: str = '{"timezone":"Europe/Paris"}') -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def refusal(check, *args) -> ApiError:
    with pytest.raises(ApiError) as caught:
        check(*args)
    error = caught.value
    assert (error.status, error.code) == (400, "invalid_request")
    return error


def assert_names(error: ApiError, param: str) -> None:
    assert error.param == param and param in error.message, (error.param, error.message)


def fields(**payload) -> dict:
    return tools.checked_tool_fields(payload)


def completion(**payload) -> dict:
    return {"model": GLM, "messages": [USER], **payload}


def schema_of_bytes(size: int, char: str = "x") -> dict:
    # '{"d":""}' is 8 bytes; each `char` adds its UTF-8 length.
    padding, rest = divmod(size - 8, len(char.encode()))
    assert rest == 0
    return {"d": char * padding}


def schema_of_depth(depth: int) -> dict:
    schema: dict = {}
    for _ in range(depth - 1):
        schema = {"p": schema}
    return schema


# The tools themselves: their bounds.


def test_tools_reach_the_model_in_openais_shape_with_only_known_keys():
    parameters = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
    inputs = fields(tools=[{"type": "function", "extra": 1,
                            "function": {"name": "current_time", "description": "Now.", "parameters": parameters, "strict": True, "x": 2}},
                           tool("no_arguments")])
    assert inputs == {"tools": [
        {"type": "function", "function": {"name": "current_time", "description": "Now.", "parameters": parameters, "strict": True}},
        {"type": "function", "function": {"name": "no_arguments", "description": "", "parameters": {"type": "object", "properties": {}}}},
    ]}


@pytest.mark.parametrize("value", [None, []], ids=["absent", "empty"])
def test_a_request_without_tools_adds_no_inputs(value):
    assert fields(tools=value) == {}


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        pytest.param([tool(f"t{i}") for i in range(64)], True, id="64-tools"),
        pytest.param([tool(f"t{i}") for i in range(65)], False, id="65-tools"),
    ],
)
def test_at_most_64_tools(value, ok):
    if ok:
        assert len(fields(tools=value)["tools"]) == 64
    else:
        assert_names(refusal(tools.checked_tools, value), "tools")


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        pytest.param("a" * 64, True, id="64-chars"),
        pytest.param("A-z_0-9", True, id="letters-digits-dash-underscore"),
        pytest.param("a" * 65, False, id="65-chars"),
        pytest.param("", False, id="empty"),
        pytest.param("get weather", False, id="space"),
        pytest.param("get.weather", False, id="dot"),
        pytest.param("wetter_\u00e4", False, id="non-ascii-letter"),
        pytest.param("name\n", False, id="trailing-newline"),
        pytest.param(5, False, id="not-a-string"),
        pytest.param(None, False, id="missing"),
    ],
)
def test_tool_names_are_1_to_64_letters_digits_dashes_or_underscores(name, ok):
    value = [tool(), {"type": "function", "function": {"name": name}}]
    if ok:
        assert fields(tools=value)["tools"][1]["function"]["name"] == name
    else:
        assert_names(refusal(tools.checked_tools, value), "tools[1].function.name")


def test_tool_names_are_unique():
    error = refusal(tools.checked_tools, [tool("a"), tool("b"), tool("a")])
    assert_names(error, "tools[2].function.name")
    assert "unique" in error.message


@pytest.mark.parametrize(
    ("description", "ok"),
    [
        pytest.param("d" * 16384, True, id="16384-chars"),
        pytest.param("\u00e9" * 16384, True, id="16384-chars-not-bytes"),
        pytest.param("d" * 16385, False, id="16385-chars"),
        pytest.param(["d"], False, id="not-a-string"),
    ],
)
def test_a_description_has_at_most_16384_characters(description, ok):
    value = [tool(description=description)]
    if ok:
        assert fields(tools=value)["tools"][0]["function"]["description"] == description
    else:
        assert_names(refusal(tools.checked_tools, value), "tools[0].function.description")


@pytest.mark.parametrize(
    ("parameters", "ok"),
    [
        pytest.param(schema_of_bytes(16 * 1024), True, id="16-KiB"),
        pytest.param(schema_of_bytes(16 * 1024 + 1), False, id="16-KiB-and-a-byte"),
        pytest.param(schema_of_bytes(16 * 1024 + 2, "\u00e9"), False, id="bytes-not-characters"),
        pytest.param(schema_of_depth(16), True, id="16-deep"),
        pytest.param(schema_of_depth(17), False, id="17-deep"),
        pytest.param({"p": [[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]}, False, id="arrays-count-as-levels"),
        pytest.param({"maximum": float("inf")}, False, id="a-number-json-cannot-carry"),
        pytest.param([], False, id="a-list"),
        pytest.param("{}", False, id="a-string"),
    ],
)
def test_a_tools_parameters_are_a_json_object_of_at_most_16_KiB_and_16_levels(parameters, ok):
    value = [tool(parameters=parameters)]
    if ok:
        assert fields(tools=value)["tools"][0]["function"]["parameters"] == parameters
    else:
        assert_names(refusal(tools.checked_tools, value), "tools[0].function.parameters")


def test_all_tools_together_are_at_most_256_KiB_of_json():
    # 256 KiB since issue 42 (64 KiB before): Claude Code sends 61 KB with its betas off.
    assert tools.MAX_TOOLS_BYTES == 256 * 1024

    def tools_of_bytes(size: int) -> list[dict]:
        value = [tool(f"t{i}", parameters=schema_of_bytes(16_000)) for i in range(16)]
        value.append(tool("last", parameters=schema_of_bytes(8)))
        short = size - tools.json_size(tools.checked_tools(value))
        value[-1]["function"]["parameters"] = schema_of_bytes(8 + short)
        return value

    at_the_bound = tools_of_bytes(256 * 1024)
    assert tools.json_size(fields(tools=at_the_bound)["tools"]) == 256 * 1024
    assert_names(refusal(tools.checked_tools, tools_of_bytes(256 * 1024 + 1)), "tools")


@pytest.mark.parametrize(
    ("value", "param"),
    [
        pytest.param({"type": "function"}, "tools", id="an-object-not-a-list"),
        pytest.param(["current_time"], "tools[0]", id="a-tool-not-an-object"),
        pytest.param([{"type": "code_interpreter"}], "tools[0].type", id="not-a-function-tool"),
        pytest.param([{"function": {"name": "f"}}], "tools[0].type", id="no-type"),
        pytest.param([{"type": "function", "function": "f"}], "tools[0].function", id="function-not-an-object"),
        pytest.param([tool(strict="yes")], "tools[0].function.strict", id="strict-not-a-boolean"),
    ],
)
def test_malformed_tools_are_refused_naming_the_field(value, param):
    assert_names(refusal(tools.checked_tools, value), param)


def test_a_schema_10000_levels_deep_is_refused_without_recursion():
    deep = schema_of_depth(10_000)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # a recursive walk of 10,000 levels could not pass unnoticed
    try:
        error = refusal(tools.checked_parameters, deep, "tools[0].function.parameters")
        assert_names(error, "tools[0].function.parameters")
        assert tools.json_depth(deep, 16) == 17
        assert "deeper than 16" in refusal(tools.checked_tools, [tool(parameters=deep)]).message
    finally:
        sys.setrecursionlimit(limit)


def test_a_schema_that_contains_itself_is_refused_as_too_deep():
    cycle: dict = {"type": "object"}
    cycle["properties"] = {"self": cycle}
    assert_names(refusal(tools.checked_tools, [tool(parameters=cycle)]), "tools[0].function.parameters")


@pytest.mark.parametrize(
    ("value", "depth"),
    [(5, 0), ("x", 0), ({}, 1), ([], 1), ({"a": [1, {"b": 2}]}, 3), ([[], [[[]]]], 4)],
)
def test_json_depth_counts_arrays_and_objects_as_text_nesting_does(value, depth):
    assert tools.json_depth(value, 64) == depth


# tool_choice and parallel_tool_calls.


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_tool_choice_words_are_sent_as_given(choice):
    assert fields(tools=[tool()], tool_choice=choice) == {"tools": fields(tools=[tool()])["tools"], "tool_choice": choice}


def test_a_named_tool_choice_is_sent_with_only_its_known_keys():
    inputs = fields(tools=[tool(), tool("other")], tool_choice={"type": "function", "function": {"name": "other", "x": 1}, "y": 2})
    assert inputs["tool_choice"] == {"type": "function", "function": {"name": "other"}}


@pytest.mark.parametrize(
    ("choice", "param"),
    [
        pytest.param("any", "tool_choice", id="any"),
        pytest.param("Auto", "tool_choice", id="case"),
        pytest.param(True, "tool_choice", id="boolean"),
        pytest.param({"type": "function"}, "tool_choice", id="no-function"),
        pytest.param({"type": "tool", "function": {"name": "current_time"}}, "tool_choice", id="wrong-type"),
        pytest.param({"type": "function", "function": {"name": "other"}}, "tool_choice.function.name", id="not-one-of-tools"),
        pytest.param({"type": "function", "function": {"name": ["current_time"]}}, "tool_choice.function.name", id="name-not-a-string"),
    ],
)
def test_other_tool_choices_are_refused_naming_the_field(choice, param):
    assert_names(refusal(lambda: fields(tools=[tool()], tool_choice=choice)), param)


def test_any_is_refused_with_a_pointer_to_required():
    assert '"required"' in refusal(lambda: fields(tools=[tool()], tool_choice="any")).message


@pytest.mark.parametrize("value", [True, False])
def test_parallel_tool_calls_is_sent_as_given(value):
    assert fields(tools=[tool()], parallel_tool_calls=value)["parallel_tool_calls"] is value


@pytest.mark.parametrize(
    ("payload", "param"),
    [
        pytest.param({"tool_choice": "auto"}, "tool_choice", id="choice-without-tools"),
        pytest.param({"tools": [], "tool_choice": "none"}, "tool_choice", id="choice-with-empty-tools"),
        pytest.param({"parallel_tool_calls": False}, "parallel_tool_calls", id="parallel-without-tools"),
        pytest.param({"tools": [tool()], "parallel_tool_calls": 1}, "parallel_tool_calls", id="parallel-not-a-boolean"),
    ],
)
def test_tool_choice_and_parallel_tool_calls_need_tools(payload, param):
    assert_names(refusal(tools.checked_tool_fields, payload), param)


# Which models answer a request with tools.


def test_fallbacks_that_do_not_take_tools_are_left_out_of_the_configured_order():
    turn = validate_chat({"messages": [USER], "tools": [tool()]}, CONFIG)
    assert turn.models == (GLM, LLAMA_33)
    assert validate_chat({"messages": [USER]}, CONFIG).models == (), "without tools: MODEL's order, as before"


def test_fallbacks_that_do_not_take_tools_are_left_out_of_a_requested_models_order():
    assert validate_chat({"messages": [USER], "model": LLAMA_33, "tools": [tool()]}, CONFIG).models == (LLAMA_33, GLM)
    request = validate_completion(completion(model=LLAMA_33, tools=[tool()]), CONFIG)
    assert request.turn.models == (LLAMA_33, GLM)


@pytest.mark.parametrize("surface", ["chat", "openai", "ui-chat"])
def test_a_requested_model_that_does_not_take_tools_is_a_400_on_tools(surface):
    ui_user = {"role": "user", "parts": [{"type": "text", "text": "hi"}]}
    check = {
        "chat": lambda: validate_chat({"messages": [USER], "model": GRANITE, "tools": [tool()]}, CONFIG),
        "openai": lambda: validate_completion(completion(model=GRANITE, tools=[tool()]), CONFIG),
        "ui-chat": lambda: validate_ui_chat({"messages": [ui_user], "model": GRANITE, "tools": [tool()]}, CONFIG),
    }[surface]
    error = refusal(check)
    assert error.param == "tools" and error.message == f"tools: {GRANITE} does not take tools."


def test_a_named_model_that_does_not_take_tools_is_a_400_even_with_fallbacks_that_do():
    config = Config(model=GLM, fallback_models=(LLAMA_31,))
    error = refusal(lambda: validate_chat({"messages": [USER], "tools": [tool()], "model": LLAMA_31}, config))
    assert error.param == "tools" and LLAMA_31 in error.message


def test_when_no_model_was_named_the_workers_order_keeps_those_that_take_tools():
    config = Config(model=LLAMA_31, fallback_models=(GRANITE, GLM, LLAMA_33))
    assert validate_chat({"messages": [USER], "tools": [tool()]}, config).models == (GLM, LLAMA_33)
    none_take_them = Config(model=LLAMA_31, fallback_models=(GRANITE,))
    assert refusal(lambda: validate_chat({"messages": [USER], "tools": [tool()]}, none_take_them)).param == "tools"


def test_a_history_of_calls_without_tools_is_also_kept_from_models_that_take_none():
    config = Config(model=GLM, fallback_models=(GRANITE, LLAMA_33), max_input_chars=600_000)
    assert validate_chat({"messages": with_calls(call())}, config).models == (GLM, LLAMA_33)
    assert validate_chat({"messages": [USER]}, config).models == ()  # no tools anywhere: MODEL's order as it is
    named = refusal(lambda: validate_chat({"messages": with_calls(call()), "model": GRANITE}, config))
    assert named.param == "messages" and "conversation's calls" in named.message  # not `tools`: the request sent none


def test_a_model_the_catalog_does_not_list_is_assumed_to_take_tools():
    unlisted = Config(model="@cf/someone/new-model", fallback_models=(GRANITE, "@cf/someone/other"))
    assert validate_chat({"messages": [USER], "tools": [tool()]}, unlisted).models == ("@cf/someone/new-model", "@cf/someone/other")
    assert catalog.can("@cf/someone/new-model", "tools") and not catalog.can(GRANITE, "tools")


def test_tools_reach_the_model_call_of_every_surface():
    expected = {"tools": fields(tools=[tool()])["tools"], "tool_choice": "required", "parallel_tool_calls": False}
    payload = {"tools": [tool()], "tool_choice": "required", "parallel_tool_calls": False}
    ui_user = {"role": "user", "parts": [{"type": "text", "text": "hi"}]}
    for turn in (validate_chat({"messages": [USER], **payload}, CONFIG),
                 validate_completion(completion(**payload), CONFIG).turn,
                 validate_ui_chat({"messages": [ui_user], **payload}, CONFIG)):
        assert turn.tool_inputs == expected
        call_ = model_call(turn, CONFIG, request_id="r1", route="chat", client="c")
        assert {key: call_.inputs[key] for key in expected} == expected
        assert call_.models == (GLM, LLAMA_33)
        assert ModelCall.from_order(json.loads(json.dumps(call_.as_order()))).inputs == call_.inputs


# The history on /v1 and /api/chat.

ASKED_AND_ANSWERED = [
    USER,
    {"role": "assistant", "content": None, "tool_calls": [call("call_1"), call("call_2", arguments='{"timezone":"UTC"}')]},
    {"role": "tool", "tool_call_id": "call_2", "content": "12:00", "name": "ignored"},
    {"role": "tool", "tool_call_id": "call_1", "content": "13:00"},
]


@pytest.mark.parametrize("surface", ["chat", "openai"])
def test_calls_and_results_reach_the_model_in_the_bindings_shape(surface):
    if surface == "chat":
        turn = validate_chat({"messages": ASKED_AND_ANSWERED}, CONFIG)
    else:
        turn = validate_completion(completion(messages=ASKED_AND_ANSWERED), CONFIG).turn
    assert list(turn.messages) == [
        USER,
        {"role": "assistant", "content": "", "tool_calls": [call("call_1"), call("call_2", arguments='{"timezone":"UTC"}')]},
        {"role": "tool", "tool_call_id": "call_2", "name": "current_time", "content": "12:00"},
        {"role": "tool", "tool_call_id": "call_1", "name": "current_time", "content": "13:00"},
    ]
    assert turn.model_inputs("")["messages"] == list(turn.messages)


def test_ids_are_kept_as_they_are():
    odd = "\u00e9\U0001f600 call/1 \" '"
    messages = [USER, {"role": "assistant", "content": "Let me look.", "tool_calls": [{"id": odd, "function": {"name": "x.y", "arguments": "not json"}}]},
                {"role": "tool", "tool_call_id": odd, "content": ""}]
    turn = validate_chat({"messages": messages}, CONFIG)
    # Arguments that are not a JSON object reach the model as {} (checked_arguments says why).
    assert turn.messages[1] == {"role": "assistant", "content": "Let me look.", "tool_calls": [call(odd, "x.y", "{}")]}
    assert turn.messages[2] == {"role": "tool", "tool_call_id": odd, "name": "x.y", "content": ""}


@pytest.mark.parametrize("content", [None, "", "  "], ids=["null", "empty", "blank"])
def test_assistant_turns_with_empty_or_null_content_are_accepted(content):
    messages = [USER, {"role": "assistant", "content": content}, {"role": "user", "content": "Hello?"}]
    assert validate_chat({"messages": messages}, CONFIG).messages[1] == {"role": "assistant", "content": content or ""}
    assert validate_completion(completion(messages=messages), CONFIG).turn.messages[1] == {"role": "assistant", "content": content or ""}


def test_user_and_system_messages_still_need_a_character_other_than_whitespace():
    assert_names(refusal(lambda: validate_chat({"messages": [{"role": "user", "content": " "}]}, CONFIG)), "messages[0].content")
    error = refusal(lambda: validate_completion(completion(messages=[{"role": "system", "content": "\n"}, USER]), CONFIG))
    assert_names(error, "messages[0].content")


def test_on_v1_a_tool_result_may_be_text_parts():
    messages = [*ASKED_AND_ANSWERED[:3], {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "13"}, {"type": "text", "text": ":00"}]}]
    assert validate_completion(completion(messages=messages), CONFIG).turn.messages[3]["content"] == "13\n:00"
    assert_names(refusal(lambda: validate_chat({"messages": messages}, CONFIG)), "messages[3].content")


@pytest.mark.parametrize(
    ("last", "ok"),
    [
        pytest.param(ASKED_AND_ANSWERED[3], True, id="tool"),
        pytest.param({"role": "user", "content": "and now?"}, True, id="user"),
        pytest.param({"role": "assistant", "content": "prefill"}, False, id="assistant"),
    ],
)
def test_the_last_message_is_the_users_or_a_tool_result(last, ok):
    messages = [*ASKED_AND_ANSWERED[:3], last]
    if ok:
        assert validate_chat({"messages": messages}, CONFIG).messages[-1]["role"] == last["role"]
    else:
        assert_names(refusal(lambda: validate_chat({"messages": messages}, CONFIG)), "messages")


@pytest.mark.parametrize(
    ("messages", "param"),
    [
        pytest.param([{"role": "tool", "tool_call_id": "call_1", "content": "13:00"}], "messages[0].tool_call_id", id="no-call-before"),
        pytest.param([USER, {"role": "assistant", "content": "Hi"}, {"role": "tool", "tool_call_id": "call_1", "content": "x"}],
                     "messages[2].tool_call_id", id="after-an-assistant-without-calls"),
        pytest.param([*ASKED_AND_ANSWERED, {"role": "assistant", "content": None, "tool_calls": [call("call_3")]},
                      {"role": "tool", "tool_call_id": "call_1", "content": "x"}],
                     "messages[5].tool_call_id", id="answers-an-older-message"),
        pytest.param([*ASKED_AND_ANSWERED[:2], {"role": "tool", "tool_call_id": "call_9", "content": "x"}],
                     "messages[2].tool_call_id", id="an-id-never-called"),
    ],
)
def test_a_tool_result_answers_a_call_of_the_nearest_assistant_message_with_calls(messages, param):
    assert_names(refusal(lambda: validate_chat({"messages": messages}, CONFIG)), param)
    assert_names(refusal(lambda: validate_completion(completion(messages=messages), CONFIG)), param)


def with_calls(*calls, content=None) -> list[dict]:
    return [USER, {"role": "assistant", "content": content, "tool_calls": list(calls)}, {"role": "user", "content": "go on"}]


@pytest.mark.parametrize(
    ("calls", "ok"),
    [
        pytest.param([call("i" * 256)], True, id="id-of-256-chars"),
        pytest.param([call("i" * 257)], False, id="id-of-257-chars"),
        pytest.param([call("")], False, id="empty-id"),
        pytest.param([call("call\x00")], False, id="nul"),
        pytest.param([call("call\n1")], False, id="newline"),
        pytest.param([call("call\x7f")], False, id="delete"),
        pytest.param([call("call\x85")], False, id="c1-next-line"),
        pytest.param([{"type": "function", "function": {"name": "f", "arguments": "{}"}}], False, id="missing-id"),
        pytest.param([call(5)], False, id="number-id"),
    ],
)
def test_call_ids_are_1_to_256_characters_without_control_characters(calls, ok):
    if ok:
        assert validate_chat({"messages": with_calls(*calls)}, CONFIG).messages[1]["tool_calls"] == calls
    else:
        assert_names(refusal(lambda: validate_chat({"messages": with_calls(*calls)}, CONFIG)), "messages[1].tool_calls[0].id")


def test_a_tool_call_id_is_checked_like_a_call_id():
    messages = [*ASKED_AND_ANSWERED[:2], {"role": "tool", "tool_call_id": "call\t1", "content": "x"}]
    assert_names(refusal(lambda: validate_chat({"messages": messages}, CONFIG)), "messages[2].tool_call_id")


@pytest.mark.parametrize(
    ("arguments", "ok"),
    [
        pytest.param('{"a":"' + "a" * (256 * 1024 - 8) + '"}', True, id="256-KiB"),
        pytest.param('{"a":"' + "a" * (256 * 1024 - 7) + '"}', False, id="256-KiB-and-a-byte"),
        pytest.param("\u00e9" * (128 * 1024 + 1), False, id="bytes-not-characters"),
        pytest.param({"timezone": "UTC"}, False, id="an-object-not-a-string"),
        pytest.param(None, False, id="missing"),
    ],
)
def test_arguments_are_a_string_of_at_most_256_KiB(arguments, ok):
    calls = [call(arguments=arguments)]
    if ok:
        assert validate_chat({"messages": with_calls(*calls)}, CONFIG).messages[1]["tool_calls"][0]["function"]["arguments"] == arguments
    else:
        assert_names(refusal(lambda: validate_chat({"messages": with_calls(*calls)}, CONFIG)), "messages[1].tool_calls[0].function.arguments")


def test_at_most_128_calls_per_message():
    assert len(validate_chat({"messages": with_calls(*[call(f"c{i}") for i in range(128)])}, CONFIG).messages[1]["tool_calls"]) == 128
    assert_names(refusal(lambda: validate_chat({"messages": with_calls(*[call(f"c{i}") for i in range(129)])}, CONFIG)), "messages[1].tool_calls")


@pytest.mark.parametrize(
    ("message", "param"),
    [
        pytest.param({"role": "assistant", "content": None, "tool_calls": {"id": "c"}}, "messages[1].tool_calls", id="calls-not-a-list"),
        pytest.param({"role": "assistant", "content": None, "tool_calls": ["c"]}, "messages[1].tool_calls[0]", id="call-not-an-object"),
        pytest.param({"role": "assistant", "content": None, "tool_calls": [{**call(), "type": "custom"}]}, "messages[1].tool_calls[0].type", id="not-a-function-call"),
        pytest.param({"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": "f"}]}, "messages[1].tool_calls[0].function", id="function-not-an-object"),
        pytest.param({"role": "assistant", "content": None, "tool_calls": [call(name="")]}, "messages[1].tool_calls[0].function.name", id="empty-name"),
        pytest.param({"role": "assistant", "content": None, "tool_calls": [call("c"), call("c")]}, "messages[1].tool_calls[1].id", id="duplicate-id"),
        pytest.param({"role": "assistant", "content": 5}, "messages[1].content", id="content-a-number"),
        pytest.param({"role": "tool", "tool_call_id": "call_1", "content": None}, "messages[1].content", id="tool-content-null"),
    ],
)
def test_malformed_calls_and_results_are_refused_naming_the_field(message, param):
    messages = [USER, message, {"role": "user", "content": "go on"}]
    assert_names(refusal(lambda: validate_chat({"messages": messages}, CONFIG)), param)


def test_arguments_and_results_count_towards_max_input_chars():
    small = Config(model=GLM, max_input_chars=60)
    messages = [{"role": "user", "content": "u" * 10},
                {"role": "assistant", "content": "a" * 10, "tool_calls": [call(arguments='{"g":"' + "g" * 12 + '"}')]},
                {"role": "tool", "tool_call_id": "call_1", "content": "r" * 20}]
    assert validate_chat({"messages": messages}, small)
    messages[2] = {**messages[2], "content": "r" * 21}
    assert_names(refusal(lambda: validate_chat({"messages": messages}, small)), "messages")


def test_the_legacy_function_fields_are_refused_with_a_pointer_to_tools():
    for payload, param in (({"functions": [{"name": "f"}]}, "functions"), ({"function_call": "auto"}, "function_call")):
        error = refusal(lambda payload=payload: validate_completion(completion(**payload), CONFIG))
        assert error.param == param and "tool" in error.message


def test_session_keys_read_histories_with_calls_and_stay_the_same_as_the_conversation_grows():
    first = validate_chat({"messages": [USER]}, CONFIG)
    later = validate_chat({"messages": [*ASKED_AND_ANSWERED, {"role": "assistant", "content": "It is 13:00."}, {"role": "user", "content": "Thanks"}]}, CONFIG)
    assert session_key(first, "c") == session_key(later, "c")
    opened_by_a_system_message = validate_completion(completion(messages=[{"role": "system", "content": "Short."}, *ASKED_AND_ANSWERED]), CONFIG)
    assert session_key(opened_by_a_system_message.turn, "c").startswith("ses-")


# /api/ui-chat: UI messages with tool parts.


def ui(role: str, *parts: dict) -> dict:
    return {"role": role, "parts": list(parts)}


def text(value: str) -> dict:
    return {"type": "text", "text": value}


STEP = {"type": "step-start"}


def test_ui_tool_parts_become_calls_and_results_step_by_step():
    turn = validate_ui_chat({"messages": [
        ui("user", text("Time in Paris and Tokyo?")),
        ui("assistant", STEP, {"type": "reasoning", "text": "hmm"}, text("Let me look."),
           {"type": "tool-current_time", "toolCallId": "c1", "state": "output-available", "input": {"timezone": "Europe/Paris"}, "output": "13:00"},
           {"type": "dynamic-tool", "toolName": "clock", "toolCallId": "c2", "state": "output-available", "input": {"zone": "Asia/Tokyo"},
            "output": {"time": "21:00", "note": "\u00e9"}},
           STEP, text("Paris: 13:00, "), text("Tokyo: 21:00.")),
        ui("user", text("And Sydney?")),
        ui("assistant", STEP,
           {"type": "tool-current_time", "toolCallId": "c3", "state": "output-error", "input": {"timezone": "Sydney"}, "errorText": "unknown zone"}),
    ]}, CONFIG)
    assert list(turn.messages) == [
        {"role": "user", "content": "Time in Paris and Tokyo?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            call("c1", "current_time", '{"timezone":"Europe/Paris"}'), call("c2", "clock", '{"zone":"Asia/Tokyo"}')]},
        {"role": "tool", "tool_call_id": "c1", "name": "current_time", "content": "13:00"},
        {"role": "tool", "tool_call_id": "c2", "name": "clock", "content": '{"time":"21:00","note":"\u00e9"}'},
        {"role": "assistant", "content": "Paris: 13:00, Tokyo: 21:00."},
        {"role": "user", "content": "And Sydney?"},
        {"role": "assistant", "content": "", "tool_calls": [call("c3", "current_time", '{"timezone":"Sydney"}')]},
        {"role": "tool", "tool_call_id": "c3", "name": "current_time", "content": "unknown zone"},
    ]


def test_ui_calls_without_a_result_are_left_out_with_their_empty_steps():
    turn = validate_ui_chat({"messages": [
        ui("user", text("first")),
        ui("assistant", STEP, {"type": "tool-a", "toolCallId": "c1", "state": "input-streaming", "input": {}},
           {"type": "tool-b", "toolCallId": "c2", "state": "input-available", "input": {}},
           {"type": "tool-c", "toolCallId": "c3", "state": "approval-requested", "input": {}}),
        ui("assistant", STEP, text("Partly "), {"type": "tool-a", "toolCallId": "c4", "state": "input-available", "input": {}}, text("done.")),
        ui("user", text("again")),
    ]}, CONFIG)
    assert list(turn.messages) == [{"role": "user", "content": "first"}, {"role": "assistant", "content": "Partly done."},
                                   {"role": "user", "content": "again"}]


def test_a_ui_input_that_failed_to_parse_reaches_the_model_as_an_empty_object():
    turn = validate_ui_chat({"messages": [
        ui("user", text("hi")),
        ui("assistant", {"type": "tool-a", "toolCallId": "c1", "state": "output-error", "rawInput": '{"x":', "errorText": "bad JSON"},
           {"type": "dynamic-tool", "toolName": "b", "toolCallId": "c2", "state": "output-error", "input": "{oops", "errorText": "bad"}),
    ]}, CONFIG)
    # vLLM cannot read them back (checked_arguments); the error result says what happened.
    assert [c["function"]["arguments"] for c in turn.messages[1]["tool_calls"]] == ["{}", "{}"]
    assert [m["content"] for m in turn.messages[2:]] == ["bad JSON", "bad"]
    assert turn.messages[-1]["role"] == "tool", "a turn may end with the results"


@pytest.mark.parametrize(
    ("part", "param"),
    [
        pytest.param({"type": "tool-a", "toolCallId": "c\n1", "state": "output-available", "input": {}, "output": 1}, "messages[1].parts[1].toolCallId", id="control-char-in-id"),
        pytest.param({"type": "tool-a", "toolCallId": "c" * 257, "state": "output-available", "input": {}, "output": 1}, "messages[1].parts[1].toolCallId", id="id-too-long"),
        pytest.param({"type": "tool-a", "state": "output-available", "input": {}, "output": 1}, "messages[1].parts[1].toolCallId", id="no-id"),
        pytest.param({"type": "tool-", "toolCallId": "c1", "state": "output-available", "input": {}, "output": 1}, "messages[1].parts[1].type", id="no-name"),
        pytest.param({"type": "dynamic-tool", "toolCallId": "c1", "state": "output-available", "input": {}, "output": 1}, "messages[1].parts[1].toolName", id="dynamic-without-name"),
        pytest.param({"type": "tool-a", "toolCallId": "c1", "state": "output-error", "input": {}}, "messages[1].parts[1].errorText", id="error-without-text"),
        pytest.param({"type": "tool-a", "toolCallId": "c1", "state": "output-available", "input": {"n": float("inf")}, "output": 1}, "messages[1].parts[1].input", id="input-json-cannot-carry"),
        pytest.param({"type": "tool-a", "toolCallId": "c1", "state": "output-available", "input": "x" * (256 * 1024), "output": 1}, "messages[1].parts[1].input", id="input-over-256-KiB"),
        pytest.param({"type": "tool-a", "toolCallId": "c0", "state": "output-available", "input": {}, "output": 1}, "messages[1].parts[1].toolCallId", id="duplicate-id-in-a-step"),
    ],
)
def test_malformed_ui_tool_parts_are_refused_naming_the_part(part, param):
    first = {"type": "tool-a", "toolCallId": "c0", "state": "output-available", "input": {}, "output": 1}
    payload = {"messages": [ui("user", text("hi")), ui("assistant", first, part)]}
    assert_names(refusal(lambda: validate_ui_chat(payload, CONFIG)), param)


def test_ui_steps_hold_at_most_128_calls():
    def parts(count: int) -> list[dict]:
        return [{"type": "tool-a", "toolCallId": f"c{i}", "state": "output-available", "input": {}, "output": ""} for i in range(count)]

    roomy = Config(model=GLM, max_messages=300)
    assert len(validate_ui_chat({"messages": [ui("user", text("hi")), ui("assistant", *parts(128))]}, roomy).messages) == 130
    assert_names(refusal(lambda: validate_ui_chat({"messages": [ui("user", text("hi")), ui("assistant", *parts(129))]}, roomy)), "messages[1].parts")


def test_ui_results_count_as_messages_towards_max_messages():
    exchange = {"type": "tool-a", "toolCallId": "c1", "state": "output-available", "input": {}, "output": "x"}
    payload = {"messages": [ui("user", text("hi")), ui("assistant", exchange, STEP, text("ok")), ui("user", text("more"))]}
    assert len(validate_ui_chat(payload, Config(model=GLM, max_messages=5)).messages) == 5
    error = refusal(lambda: validate_ui_chat(payload, Config(model=GLM, max_messages=4)))
    assert error.param == "messages" and "5 model messages" in error.message


def test_a_ui_message_cannot_claim_the_tool_role():
    assert_names(refusal(lambda: validate_ui_chat({"messages": [ui("tool", text("13:00"))]}, CONFIG)), "messages[0].role")


# Whatever arrives, only a 400 comes out.

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "function", "name", "parameters", "description", "strict", "id", "arguments"]) | st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)
names = st.sampled_from(["current_time", "a", "", "x y", 5])
tool_values = st.fixed_dictionaries(
    {"type": st.sampled_from(["function", "other"]),
     "function": st.fixed_dictionaries({"name": names}, optional={"description": json_values, "parameters": json_values, "strict": json_values})}
) | json_values
call_values = st.fixed_dictionaries({"id": names, "function": st.fixed_dictionaries({"name": names, "arguments": json_values | st.text(max_size=8)})}) | json_values
history = st.lists(st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": st.sampled_from(["hi", " ", None])}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": json_values}, optional={"tool_calls": st.lists(call_values, max_size=3) | json_values}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": names | json_values, "content": json_values}),
), min_size=1, max_size=5)
payloads = st.fixed_dictionaries(
    {"model": st.just(GLM), "messages": history},
    optional={"tools": st.lists(tool_values, max_size=3) | json_values, "tool_choice": json_values | st.sampled_from(["auto", "any"]),
              "parallel_tool_calls": json_values},
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=payloads)
def test_any_tools_and_history_are_accepted_or_refused_with_a_400(payload):
    for check in (validate_chat, validate_completion):
        try:
            check(payload, CONFIG)
        except ApiError as error:
            assert (error.status, error.code) == (400, "invalid_request") and error.param is not None, error.message


def test_a_ui_conversation_that_ends_with_the_assistant_is_continued_in_that_message():
    call = {"type": "tool-current_time", "toolCallId": "c1", "state": "output-available", "input": {}, "output": "09:30"}
    payload = {"messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "time?"}]},
        {"id": "a1", "role": "assistant", "parts": [{"type": "step-start"}, call]},
    ]}
    assert validate_ui_chat(payload, CONFIG).continues_message == "a1"
    payload["messages"].append({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "and now?"}]})
    assert validate_ui_chat(payload, CONFIG).continues_message is None


@pytest.mark.parametrize("arguments", ["not json", "[1, 2]", "42", '"text"', "null", "[" * 100 + "]" * 100, ""])
def test_history_arguments_that_are_not_a_json_object_reach_the_model_as_an_empty_object(arguments):
    turn = validate_chat({"messages": with_calls(call(arguments=arguments))}, CONFIG)
    assert turn.messages[1]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_history_arguments_that_are_a_json_object_are_sent_as_they_are():
    text = '{ "zone" : "UTC", "n": 1e400 }'  # spacing and numbers kept as the model wrote them
    assert validate_chat({"messages": with_calls(call(arguments=text))}, CONFIG).messages[1]["tool_calls"][0]["function"]["arguments"] == text
