"""The OpenAI-compatible surface's pure parts on CPython: request checks, the model list,
the error shape, and what reaches the model."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat.api.openai import model_list, openai_error_body, validate_completion
from chat.api.validation import parse_json_body
from chat.config import Config, ConfigError
from chat.web.errors import ApiError
from chat.web.http import CORS_HEADERS, allowed_headers

CONFIG = Config(model="@cf/zai-org/glm-4.7-flash", fallback_models=("@cf/google/gemma-4-26b-a4b-it", "@cf/meta/llama-3.3-70b-instruct-fp8-fast"), system_prompt="Be kind.", max_tokens=100, max_messages=4, max_input_chars=50)
USER = [{"role": "user", "content": "hi"}]


def checked(**fields):
    return validate_completion({"model": "@cf/zai-org/glm-4.7-flash", "messages": USER, **fields}, CONFIG)


def refused(payload, config: Config = CONFIG) -> ApiError:
    with pytest.raises(ApiError) as caught:
        validate_completion(payload, config)
    return caught.value


def test_a_plain_request_takes_the_configured_defaults():
    request = checked()
    assert request.turn.models == ("@cf/zai-org/glm-4.7-flash", "@cf/google/gemma-4-26b-a4b-it", "@cf/meta/llama-3.3-70b-instruct-fp8-fast") and not request.stream and request.turn.stop == ()
    assert request.turn.model_inputs("Be kind.") == {
        "messages": [{"role": "system", "content": "Be kind."}, *USER], "stream": True, "max_tokens": 100}


def test_a_fallback_model_can_be_asked_for_and_the_others_back_it_up_in_order():
    assert checked(model="@cf/google/gemma-4-26b-a4b-it").turn.models == ("@cf/google/gemma-4-26b-a4b-it", "@cf/zai-org/glm-4.7-flash", "@cf/meta/llama-3.3-70b-instruct-fp8-fast")


def test_client_system_and_developer_messages_follow_the_servers_prompt():
    request = checked(messages=[{"role": "developer", "content": "Short."}, {"role": "system", "content": "French."}, *USER])
    assert request.turn.model_inputs("Be kind.")["messages"] == [
        {"role": "system", "content": "Be kind."}, {"role": "system", "content": "Short."}, {"role": "system", "content": "French."}, *USER]


def test_a_worker_configured_to_refuse_client_system_messages_does():
    strict = Config.from_env(lambda name: {"MODEL": "@cf/zai-org/glm-4.7-flash", "OPENAI_SYSTEM_MESSAGES": "refuse"}.get(name))
    error = refused({"model": "@cf/zai-org/glm-4.7-flash", "messages": [{"role": "system", "content": "x"}, *USER]}, strict)
    assert error.param == "messages[0].role" and "set by the server" in error.message
    with pytest.raises(ConfigError, match="OPENAI_SYSTEM_MESSAGES"):
        Config.from_env(lambda name: {"MODEL": "@cf/zai-org/glm-4.7-flash", "OPENAI_SYSTEM_MESSAGES": "maybe"}.get(name))


def test_options_are_checked_and_passed_to_the_model():
    request = checked(stream=True, stream_options={"include_usage": True, "include_obfuscation": False}, max_completion_tokens=7,
                      temperature=0.2, top_p=0.9, seed=42, frequency_penalty=0.5, presence_penalty=0, stop="END",
                      user="never logged", n=1, tools=[], logprobs=False, response_format={"type": "text"}, some_new_field={"x": 1})
    assert request.stream and request.include_usage and not request.obfuscation and request.turn.stop == ("END",)
    inputs = request.turn.model_inputs("")
    assert inputs == {"messages": USER, "stream": True, "max_tokens": 7, "temperature": 0.2, "top_p": 0.9,
                      "frequency_penalty": 0.5, "presence_penalty": 0.0, "seed": 42}
    assert "never logged" not in json.dumps(inputs)


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        pytest.param({"model": None}, "model", id="model-missing"),
        pytest.param({"model": ["@cf/zai-org/glm-4.7-flash"]}, "model", id="model-not-a-string"),
        pytest.param({"messages": "hi"}, "messages", id="messages-not-a-list"),
        pytest.param({"messages": USER * 5}, "messages", id="too-many-messages"),
        pytest.param({"messages": [{"role": "user", "content": "x" * 51}]}, "messages", id="too-long"),
        pytest.param({"messages": [{"role": "user", "content": " \u3000"}]}, "messages[0].content", id="blank"),
        pytest.param({"messages": [{"role": "user", "content": None}]}, "messages[0].content", id="null-content"),
        pytest.param({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}, "messages[0].content[0]", id="text-part-not-text"),
        pytest.param({"messages": [{"role": "user", "content": ["hi"]}]}, "messages[0].content[0]", id="part-not-an-object"),
        pytest.param({"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "t"}]}, *USER]}, "messages[0].tool_calls[0].function", id="tool-call-without-function"),
        pytest.param({"messages": [{"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}, *USER]}, "messages[0].function_call", id="legacy-function-call-message"),
        pytest.param({"messages": [{"role": "function", "name": "f", "content": "x"}]}, "messages[0].role", id="function-role"),
        pytest.param({"messages": [{"role": "tool", "tool_call_id": "t", "content": "x"}]}, "messages[0].tool_call_id", id="tool-result-without-its-call"),
        pytest.param({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", id="unknown-role"),
        pytest.param({"messages": ["hi"]}, "messages[0]", id="message-not-an-object"),
        pytest.param({"messages": [*USER, {"role": "assistant", "content": "prefill"}]}, "messages", id="last-not-user"),
        pytest.param({"n": 2}, "n", id="n-2"),
        pytest.param({"n": True}, "n", id="n-true"),
        pytest.param({"n": 1.0}, "n", id="n-float"),
        pytest.param({"tools": [{"type": "function"}]}, "tools[0].function", id="tool-without-function"),
        pytest.param({"functions": [{"name": "f"}]}, "functions", id="functions"),
        pytest.param({"tool_choice": "auto"}, "tool_choice", id="tool-choice-without-tools"),
        pytest.param({"function_call": "auto"}, "function_call", id="function-call"),
        pytest.param({"response_format": {"type": "json_schema"}}, "response_format.json_schema", id="json-schema-without-its-schema"),
        pytest.param({"response_format": {"type": "xml"}}, "response_format.type", id="unknown-response-format"),
        pytest.param({"response_format": "json"}, "response_format.type", id="response-format-not-an-object"),
        pytest.param({"response_format": {"type": "json_schema", "json_schema": {"name": "a b", "schema": {}}}},
                     "response_format.json_schema.name", id="schema-name-with-a-space"),
        pytest.param({"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}, "strict": 1}}},
                     "response_format.json_schema.strict", id="strict-not-a-bool"),
        pytest.param({"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"allOf": []}}}},
                     "response_format.json_schema.schema.allOf", id="a-keyword-outside-the-subset"),
        pytest.param({"logprobs": 1}, "logprobs", id="logprobs-1-is-not-false"),
        pytest.param({"top_logprobs": 3}, "top_logprobs", id="top-logprobs"),
        pytest.param({"logit_bias": {"1": 5}}, "logit_bias", id="logit-bias"),
        pytest.param({"audio": {"voice": "x"}}, "audio", id="audio"),
        pytest.param({"modalities": ["text", "audio"]}, "modalities", id="modalities"),
        pytest.param({"max_tokens": 101}, "max_tokens", id="max-tokens-over"),
        pytest.param({"max_completion_tokens": 0}, "max_completion_tokens", id="max-completion-tokens-zero"),
        pytest.param({"max_tokens": 5, "max_completion_tokens": 6}, "max_completion_tokens", id="two-budgets-differ"),
        pytest.param({"max_tokens": True, "max_completion_tokens": 1}, "max_tokens", id="true-is-not-1"),
        pytest.param({"max_tokens": 1.0, "max_completion_tokens": 1}, "max_tokens", id="a-float-budget-beside-a-valid-one"),
        pytest.param({"max_tokens": float("inf")}, "max_tokens", id="max-tokens-inf"),
        pytest.param({"temperature": "hot"}, "temperature", id="temperature-string"),
        pytest.param({"top_p": 1.5}, "top_p", id="top-p-over"),
        pytest.param({"frequency_penalty": -2.5}, "frequency_penalty", id="penalty-below-the-models-range"),
        pytest.param({"presence_penalty": float("nan")}, "presence_penalty", id="nan-penalty"),
        pytest.param({"seed": 10**20}, "seed", id="seed-over"),
        pytest.param({"temperature": 10**400}, "temperature", id="temperature-of-400-digits"),
        pytest.param({"top_p": -(10**400)}, "top_p", id="top-p-of-400-digits"),
        pytest.param({"seed": True}, "seed", id="seed-bool"),
        pytest.param({"stream": "yes"}, "stream", id="stream-not-bool"),
        pytest.param({"stream_options": {"include_usage": True}}, "stream_options", id="stream-options-without-stream"),
        pytest.param({"stream": True, "stream_options": []}, "stream_options", id="stream-options-not-object"),
        pytest.param({"stream": True, "stream_options": {"include_usage": "yes"}}, "stream_options.include_usage", id="include-usage-not-bool"),
        pytest.param({"stop": ["a"] * 5}, "stop", id="five-stops"),
        pytest.param({"stop": [""]}, "stop", id="empty-stop"),
        pytest.param({"stop": "x" * 257}, "stop", id="long-stop"),
        pytest.param({"stop": 5}, "stop", id="stop-number"),
    ],
)
def test_what_cannot_be_honoured_is_a_400_naming_the_field(fields, param):
    error = refused({"model": "@cf/zai-org/glm-4.7-flash", "messages": USER, **fields})
    assert (error.status, error.code, error.param) == (400, "invalid_request", param)
    assert param.split("[")[0].split(".")[0] in error.message


def test_an_unknown_model_is_404_model_not_found_without_echoing_it():
    error = refused({"model": "gpt-4o" + "x" * 10_000, "messages": USER})
    assert (error.status, error.code, error.param) == (404, "model_not_found", "model") and "xxx" not in error.message


def test_errors_render_in_openais_shape():
    body = json.loads(openai_error_body(ApiError("invalid_request", "n: no.", param="n"), "r1"))
    assert body == {"error": {"message": "n: no.", "type": "invalid_request_error", "param": "n", "code": "invalid_request"}}
    assert json.loads(openai_error_body(ApiError("rate_limited"), "r1"))["error"]["type"] == "rate_limit_error"


def test_the_model_list_names_each_served_model_once():
    listed = model_list(Config(model="@cf/zai-org/glm-4.7-flash", fallback_models=("@cf/google/gemma-4-26b-a4b-it", "@cf/zai-org/glm-4.7-flash")))
    assert listed["object"] == "list" and [m["id"] for m in listed["data"]] == ["@cf/zai-org/glm-4.7-flash", "@cf/google/gemma-4-26b-a4b-it"]
    assert all(m["object"] == "model" for m in listed["data"])


@pytest.mark.parametrize(
    ("requested", "granted"),
    [
        pytest.param(None, CORS_HEADERS, id="none-asked"),
        pytest.param("X-Stainless-OS, content-type", CORS_HEADERS + ", x-stainless-os", id="sdk-headers"),
        pytest.param("bad header", CORS_HEADERS, id="not-a-token"),
        pytest.param("a," * 2000, CORS_HEADERS, id="too-long"),
    ],
)
def test_preflights_grant_well_formed_requested_headers(requested, granted):
    assert allowed_headers(requested) == granted


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.sampled_from(["role", "content", "type", "text", "include_usage"]) | st.text(max_size=5), inner, max_size=5),
    max_leaves=30,
)
FIELDS = ["model", "messages", "n", "tools", "response_format", "logprobs", "max_tokens", "max_completion_tokens", "temperature",
          "top_p", "seed", "stop", "stream", "stream_options", "frequency_penalty", "user"]
message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "developer", "tool", 1, None]), "content": json_values})
requests = st.fixed_dictionaries(
    {"model": st.sampled_from(["@cf/zai-org/glm-4.7-flash", "@cf/google/gemma-4-26b-a4b-it", "other", 5]), "messages": st.lists(message, max_size=5) | json_values},
    optional={field: json_values for field in FIELDS[2:]},
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=requests | json_values)
def test_any_json_payload_is_accepted_or_refused_with_a_4xx(payload):
    try:
        validate_completion(payload, CONFIG)
    except ApiError as error:
        assert error.code in ("invalid_request", "model_not_found") and error.status in (400, 404)


def test_hostile_bodies_are_refused_before_any_field_is_read():
    for body in (b'{"model":"@cf/zai-org/glm-4.7-flash","messages":' + b"[" * 5000 + b"]" * 5000 + b"}", b'{"seed": ' + b"9" * 5000 + b"}"):
        with pytest.raises(ApiError) as caught:
            validate_completion(parse_json_body(body), CONFIG)
        assert caught.value.status == 400
