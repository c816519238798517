"""Unit tests of the Worker's pure modules (config, validation, HTTP rules) on CPython."""

from __future__ import annotations

import pytest

from chat.api.validation import is_chat_id, is_json_media_type, parse_json_body, validate_chat, validate_ui_chat
from chat.config import Config, ConfigError
from chat.model.errors import binding_error_code
from chat.web.errors import ApiError
from chat.web.http import is_stream_id, origin_allowed, prefers_ndjson

CONFIG = Config(model="@cf/zai-org/glm-4.7-flash", max_messages=3, max_input_chars=20, max_tokens=100)


def env(**values: str):
    return lambda name: values.get(name)


def test_config_reads_defaults_and_lists():
    config = Config.from_env(env(MODEL="@cf/zai-org/glm-4.7-flash", FALLBACK_MODELS=" @cf/google/gemma-4-26b-a4b-it, ,@cf/meta/llama-3.3-70b-instruct-fp8-fast ", PADDING="0"))
    assert config.models == ("@cf/zai-org/glm-4.7-flash", "@cf/google/gemma-4-26b-a4b-it", "@cf/meta/llama-3.3-70b-instruct-fp8-fast")
    assert config.padding == 0 and config.max_body_bytes == 2 * 1024 * 1024 and config.auth_token is None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({}, "MODEL", id="no-model"),
        pytest.param({"MODEL": "m", "MAX_TOKENS": "many"}, "MAX_TOKENS must be an integer", id="not-int"),
        pytest.param({"MODEL": "m", "IDLE_TIMEOUT_MS": "0"}, "IDLE_TIMEOUT_MS must be at least 1", id="zero-timeout"),
        pytest.param({"MODEL": "m", "PADDING": "5000"}, "PADDING must be at most", id="huge-padding"),
        pytest.param({"MODEL": "m", "RESUME_GRACE_MS": "0"}, "RESUME_GRACE_MS must be at least 1", id="zero-grace"),
        pytest.param({"MODEL": "m", "RESUME_TTL_S": "soon"}, "RESUME_TTL_S must be an integer", id="ttl-not-int"),
    ],
)
def test_bad_configuration_names_the_entry(values, message):
    with pytest.raises(ConfigError, match=message):
        Config.from_env(env(**values))


def test_a_valid_turn_keeps_only_role_and_content_and_adds_the_system_prompt():
    turn = validate_chat({"messages": [{"role": "user", "content": "hi", "extra": 1}], "temperature": 0.5}, CONFIG)
    inputs = turn.model_inputs("be brief")
    assert inputs["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert inputs["stream"] is True and inputs["max_tokens"] == 100 and inputs["temperature"] == 0.5


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        pytest.param({"messages": [{"role": "user", "content": "a"}] * 4}, "at most 3", id="too-many"),
        pytest.param({"messages": [{"role": "user", "content": "a" * 21}]}, "at most 20", id="too-long"),
        pytest.param({"messages": ["hi"]}, "messages[0] must be an object", id="not-object"),
        pytest.param({"messages": [{"role": "user", "content": "   "}]}, "messages[0].content", id="blank"),
        pytest.param({"messages": [{"role": "user", "content": "a"}], "max_tokens": 1.5}, "max_tokens", id="float-tokens"),
        pytest.param({"messages": [{"role": "user", "content": "a"}], "temperature": float("nan")}, "temperature", id="nan"),
        pytest.param({"messages": [{"role": "user", "content": "a"}], "temperature": 9 * 10**4000}, "temperature", id="integer-of-4000-digits"),
    ],
)
def test_invalid_turns_say_which_field(payload, field):
    with pytest.raises(ApiError) as caught:
        validate_chat(payload, CONFIG)
    assert caught.value.status == 400 and caught.value.code == "invalid_request" and field in caught.value.message


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        pytest.param(b'{"messages":' + b"[" * 5000 + b"]" * 5000 + b"}", "invalid_json", "deeper than 64", id="deep-arrays"),
        pytest.param(b'{"a":' * 5000 + b"1" + b"}" * 5000, "invalid_json", "deeper than 64", id="deep-objects"),
        pytest.param(b'{"messages":[{"role":"user","content":' + b"[" * 100 + b"]" * 100 + b"}]}", "invalid_json", "deeper", id="deep-in-a-message"),
        pytest.param(b'{"temperature": NaN}', "invalid_json", "not valid JSON", id="nan"),
        pytest.param(b'{"temperature": -Infinity}', "invalid_json", "not valid JSON", id="infinity"),
        pytest.param(b'{"max_tokens": ' + b"9" * 5000 + b"}", "invalid_request", "too many digits", id="integer-over-digit-limit"),
    ],
)
def test_hostile_json_bodies_get_a_clear_400_without_a_recursive_parse(body, code, words):
    with pytest.raises(ApiError) as caught:
        parse_json_body(body)
    assert (caught.value.status, caught.value.code) == (400, code) and words in caught.value.message


def test_a_float_too_large_for_max_tokens_is_out_of_range_not_a_crash():
    with pytest.raises(ApiError, match="between 1 and 100"):
        validate_chat(parse_json_body(b'{"messages":[{"role":"user","content":"a"}],"max_tokens":1e400}'), CONFIG)


@pytest.mark.parametrize(
    ("content", "blank"),
    [
        pytest.param(" \t\r\n\u00a0\u2003\u3000\ufeff", True, id="ecmascript-whitespace-is-blank"),
        pytest.param("\x1c", False, id="file-separator-is-text"),
        pytest.param("\x85", False, id="next-line-is-text"),
        pytest.param(" a ", False, id="text"),
    ],
)
def test_blank_content_follows_the_published_schemas_whitespace(content, blank):
    import re
    from pathlib import Path

    import yaml

    schema = yaml.safe_load(Path("docs/openapi.yaml").read_text())["components"]["schemas"]["ChatTurn"]
    user_message = schema["properties"]["messages"]["items"]["oneOf"][0]
    assert user_message["properties"]["role"]["enum"] == ["user"]
    pattern = user_message["properties"]["content"]["pattern"]
    assert (re.search(pattern, content) is None) is blank
    payload = {"messages": [{"role": "user", "content": content}]}
    if blank:
        with pytest.raises(ApiError, match="content"):
            validate_chat(payload, CONFIG)
    else:
        assert validate_chat(payload, CONFIG).messages[0]["content"] == content


def ui(role, *parts):
    return {"role": role, "parts": list(parts)}


def test_ui_chat_skips_assistant_messages_with_only_reasoning_or_tool_parts():
    turn = validate_ui_chat(
        {"messages": [
            ui("user", {"type": "text", "text": "first"}),
            ui("assistant", {"type": "reasoning", "text": "thinking"}, {"type": "tool-weather", "input": {"city": "x"}}),
            ui("user", {"type": "text", "text": "again"}),
        ]},
        CONFIG,
    )
    assert [m["content"] for m in turn.messages] == ["first", "again"]


def test_ui_chat_errors_name_the_clients_own_message_index_after_skipping():
    with pytest.raises(ApiError, match=r"messages\[2\]\.role"):
        validate_ui_chat(
            {"messages": [ui("user", {"type": "text", "text": "a"}), ui("assistant"), ui("robot", {"type": "text", "text": "b"})]},
            CONFIG,
        )


def test_json_bodies_must_be_utf8_json():
    assert parse_json_body(b'{"a": 1}') == {"a": 1}
    for body in (b"\xff{}", b"{", b""):
        with pytest.raises(ApiError) as caught:
            parse_json_body(body)
        assert caught.value.code == "invalid_json"


@pytest.mark.parametrize(
    ("content_type", "ok"),
    [("application/json", True), ("Application/JSON; charset=utf-8", True), ("application/vnd.api+json", True),
     ("text/plain", False), (None, False), ("application/jsonp", False)],
)
def test_json_media_types(content_type, ok):
    assert is_json_media_type(content_type) is ok


@pytest.mark.parametrize(
    ("accept", "ndjson"),
    [(None, False), ("text/event-stream", False), ("application/x-ndjson", True),
     ("text/event-stream, application/x-ndjson", False), ("application/x-ndjson;q=0.9, text/event-stream", False),
     ("application/x-ndjson, */*;q=0.1", True), ("*/*", False)],
)
def test_ndjson_only_when_accept_prefers_it(accept, ndjson):
    assert prefers_ndjson(accept) is ndjson


def test_origins_without_a_list_are_open_and_same_origin_always_passes():
    restricted = Config(model="m", allowed_origins=("https://a.example",))
    assert origin_allowed("https://x.example", "https://w.dev/api/chat", CONFIG)
    assert origin_allowed("https://w.dev", "https://w.dev/api/chat", restricted)
    assert origin_allowed(None, "https://w.dev/api/chat", restricted)
    assert origin_allowed("https://a.example", "https://w.dev/api/chat", restricted)
    assert not origin_allowed("https://x.example", "https://w.dev/api/chat", restricted)


@pytest.mark.parametrize(
    ("message", "code"),
    [("3040: Capacity temporarily exceeded", 3040), ("Error: 3036: limited", 3036), ("boom", None), ("AiError: no code: here", None),
     ("a: " * 5000 + "3040: deep", None), ("x" * 100_000 + ": 3040: late", None), ("9" * 190 + ": SECRET", None)],
)
def test_binding_error_codes_are_read_from_the_message(message, code):
    assert binding_error_code(message) == code


@pytest.mark.parametrize(
    ("url", "origin", "path"),
    [
        ("https://w.example.dev/api/chat", "https://w.example.dev", "/api/chat"),
        ("http://127.0.0.1:8787/api/chat/raw?x=1#f", "http://127.0.0.1:8787", "/api/chat/raw"),
        ("https://W.Example.dev", "https://w.example.dev", "/"),
        ("https://w.example.dev?q=/api/chat", "https://w.example.dev", "/"),
        ("https://w.example.dev/health#/x", "https://w.example.dev", "/health"),
        ("https://user@w.example.dev:8443/a/b/", "https://user@w.example.dev:8443", "/a/b/"),
    ],
)
def test_origins_and_paths_are_read_from_absolute_urls_like_urllib_does(url, origin, path):
    from urllib.parse import urlsplit

    from chat.web.http import origin_of, path_of

    parts = urlsplit(url)
    assert origin_of(url) == origin == f"{parts.scheme}://{parts.netloc.lower()}"
    assert path_of(url) == path == (parts.path or "/")


def test_stream_ids_are_64_lowercase_hex_digits():
    assert is_stream_id("0123456789abcdef" * 4)
    assert not is_stream_id("0123456789ABCDEF" * 4) and not is_stream_id("a" * 63) and not is_stream_id("g" * 64)


@pytest.mark.parametrize(("value", "ok"), [("aZ0-_", True), ("x" * 128, True), ("x" * 129, False), ("", False),
                                            ("a b", False), ("é", False), ("a/b", False), (5, False), (None, False)])
def test_chat_ids(value, ok):
    assert is_chat_id(value) is ok


def test_resumable_is_a_boolean_and_a_resumable_ui_chat_carries_its_chat_id():
    messages = [{"role": "user", "content": "hi"}]
    assert validate_chat({"messages": messages, "resumable": True}, CONFIG).resumable
    assert not validate_chat({"messages": messages}, CONFIG).resumable
    with pytest.raises(ApiError, match="resumable"):
        validate_chat({"messages": messages, "resumable": 1}, CONFIG)
    ui = [{"role": "user", "parts": [{"type": "text", "text": "hi"}]}]
    assert validate_ui_chat({"messages": ui, "resumable": True, "id": "c1"}, CONFIG).chat_id == "c1"
    assert validate_ui_chat({"messages": ui, "id": "c1"}, CONFIG).chat_id == "c1", "kept for prompt caching"
    assert validate_ui_chat({"messages": ui, "id": "not/an id"}, CONFIG).chat_id is None, "not resumable: a bad id is left out"
    with pytest.raises(ApiError, match="id"):
        validate_ui_chat({"messages": ui, "resumable": True}, CONFIG)
