"""Unit tests of the Worker's pure modules (config, validation, HTTP rules) on CPython."""

from __future__ import annotations

import pytest

from chat.api_errors import ApiError, binding_error_code
from chat.config import Config, ConfigError
from chat.http import origin_allowed, prefers_ndjson
from chat.validation import is_json_media_type, parse_json_body, validate_chat

CONFIG = Config(model="@cf/m", max_messages=3, max_input_chars=20, max_tokens=100)


def env(**values: str):
    return lambda name: values.get(name)


def test_config_reads_defaults_and_lists():
    config = Config.from_env(env(MODEL="@cf/a", FALLBACK_MODELS=" @cf/b, ,@cf/c ", PADDING="0"))
    assert config.models == ("@cf/a", "@cf/b", "@cf/c")
    assert config.padding == 0 and config.max_body_bytes == 64 * 1024 and config.auth_token is None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param({}, "MODEL", id="no-model"),
        pytest.param({"MODEL": "m", "MAX_TOKENS": "many"}, "MAX_TOKENS must be an integer", id="not-int"),
        pytest.param({"MODEL": "m", "IDLE_TIMEOUT_MS": "0"}, "IDLE_TIMEOUT_MS must be at least 1", id="zero-timeout"),
        pytest.param({"MODEL": "m", "PADDING": "5000"}, "PADDING must be at most", id="huge-padding"),
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
    ],
)
def test_invalid_turns_say_which_field(payload, field):
    with pytest.raises(ApiError) as caught:
        validate_chat(payload, CONFIG)
    assert caught.value.status == 400 and caught.value.code == "invalid_request" and field in caught.value.message


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
    [("3040: Capacity temporarily exceeded", 3040), ("Error: 3036: limited", 3036), ("boom", None), ("AiError: no code: here", None)],
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

    from chat.http import origin_of, path_of

    parts = urlsplit(url)
    assert origin_of(url) == origin == f"{parts.scheme}://{parts.netloc.lower()}"
    assert path_of(url) == path == (parts.path or "/")
