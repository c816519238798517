"""Routing, CORS, 405 and auth on plain values (chat.web.routes, chat.web.exchange), and the one
table of error codes every surface renders, on CPython."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chat.config import Config, ConfigError
from chat.web.errors import ApiError
from chat.web.exchange import Exchange, PlainRequest, Reply
from chat.web.routes import ROUTES, Admitted, admit, authorize, error_renderer, match
from sse import ERROR_CODES, ERROR_MESSAGES, NDJSONEncoder, SSEEncoder, UIMessageStreamEncoder

WORKER = "https://w.example.dev"
CONFIG = Config(model="@cf/zai-org/glm-4.7-flash", openai_api_public=True)  # as the local launchers run it
CLOSED = Config(model="@cf/zai-org/glm-4.7-flash")  # as wrangler.toml deploys it, without AUTH_TOKEN
LOCKED = Config(model="@cf/zai-org/glm-4.7-flash", auth_token="s3cret", allowed_origins=("https://app.example",))


def exchange(method: str, path: str, **headers: str) -> Exchange:
    return Exchange(PlainRequest(method=method, url=WORKER + path, headers=headers), request_id="r1")


def admitted(method: str, path: str, config: Config = CONFIG, **headers: str) -> Admitted | Reply:
    return admit(exchange(method, path, **headers), match(path.partition("?")[0]), lambda: config)


def refusal(method: str, path: str, config: Config = CONFIG, **headers: str) -> ApiError:
    with pytest.raises(ApiError) as caught:
        admitted(method, path, config, **headers)
    return caught.value


def concrete(path: str) -> str:
    return path.replace("{id}", "k1")


@pytest.mark.parametrize("route", [route for route in ROUTES if route.handler is not None], ids=lambda route: route.name)
def test_each_route_admits_its_methods_and_names_its_handler(route):
    for method in route.methods:
        result = admitted(method, concrete(route.path))
        assert isinstance(result, Admitted) and result.route == route and result.token is None
        assert result.key == ("k1" if "{id}" in route.path else None)


def test_each_handler_a_route_names_is_defined_in_the_module_it_names():
    # The handler modules import js, so they are read here as text; a name missing also
    # fails at import (chat.app.handlers looks each one up).
    for route in ROUTES:
        if route.handler is None:
            continue
        module, _, name = route.handler.partition(":")
        source = (Path(__file__).resolve().parents[2] / "src" / (module.replace(".", "/") + ".py")).read_text()
        assert module.startswith("chat.app.") and f"async def {name}(" in source, route.name


def test_route_names_and_paths_are_unique():
    assert len({route.name for route in ROUTES}) == len({route.path for route in ROUTES}) == len(ROUTES)


@pytest.mark.parametrize("route", [route for route in ROUTES if route.handler is not None], ids=lambda route: route.name)
def test_a_preflight_allows_exactly_the_methods_of_its_route(route):
    reply = admitted("OPTIONS", concrete(route.path), origin="https://app.example", **{"access-control-request-method": route.methods[0]})
    assert isinstance(reply, Reply) and reply.status == 204
    assert reply.headers["access-control-allow-methods"].split(", ") == [*route.served, "OPTIONS"]


@pytest.mark.parametrize(
    ("path", "name", "key"),
    [
        ("/api/chat/streams/abc", "chat-stream", "abc"),
        ("/api/chat/streams/", "chat-stream", ""),
        ("/api/chat/streams/a/b", None, None),
        ("/api/ui-chat/c1/stream", "ui-chat-stream", "c1"),
        ("/api/ui-chat/c/1/stream", None, None),
        ("/api/ui-chat/stream", None, None),
        ("/api/ui-chat//stream", "ui-chat-stream", ""),
        ("/api/ui-chat", "ui-chat", None),
        ("/api/chat", "chat", None),
        ("/api/chat/", None, None),
    ],
)
def test_paths_with_an_id_match_their_route_with_the_id_as_sent(path, name, key):
    found = match(path)
    assert (found.route.name, found.key) == (name, key) if name else found is None


def test_errors_take_the_shape_of_the_surface_the_path_belongs_to():
    openai = json.loads(error_renderer("/v1/nope", None)(ApiError("not_found"), "r1"))
    ours = json.loads(error_renderer("/api/nope", None)(ApiError("not_found"), "r1"))
    assert openai["error"]["type"] and "request_id" in ours
    assert error_renderer("/v1/models", match("/v1/models")) is error_renderer("/v1/x", None)


def test_an_unknown_path_is_404_even_with_a_query_string():
    error = refusal("GET", "/api/chatx?x=/api/chat")
    assert (error.status, error.code) == (404, "not_found")


def test_health_answers_before_the_configuration_is_read():
    def broken() -> Config:
        raise ConfigError("MODEL must name a Workers AI model")

    for method in ("GET", "HEAD"):
        reply = admit(exchange(method, "/health"), match("/health"), broken)
        assert isinstance(reply, Reply) and reply.status == 200 and json.loads(reply.body) == {"status": "ok"}
    with pytest.raises(ConfigError):
        admit(exchange("POST", "/api/chat"), match("/api/chat"), broken)


def test_a_wrong_method_is_405_with_allow_and_the_cors_headers_of_an_allowed_origin():
    call = exchange("GET", "/api/chat", origin="https://app.example")
    with pytest.raises(ApiError) as caught:
        admit(call, match("/api/chat"), lambda: CONFIG)
    error = caught.value
    assert (error.status, error.code, error.headers["allow"]) == (405, "method_not_allowed", "POST, OPTIONS")
    reply = call.error(error)
    assert reply.headers["access-control-allow-origin"] == "https://app.example" and reply.headers["allow"] == "POST, OPTIONS"
    assert refusal("POST", "/health").headers["allow"] == "GET, HEAD, OPTIONS"
    assert refusal("POST", "/v1/models").headers["allow"] == "GET, HEAD, OPTIONS"  # HEAD wherever GET is
    assert refusal("PUT", "/api/chat/streams/" + "ab" * 32).headers["allow"] == "GET, DELETE, HEAD, OPTIONS"


def test_a_preflight_from_an_allowed_origin_gets_204_with_the_cors_grant():
    reply = admitted("OPTIONS", "/api/chat", LOCKED, origin="https://app.example")
    assert isinstance(reply, Reply) and reply.status == 204 and reply.body is None
    assert reply.headers["access-control-allow-origin"] == "https://app.example"
    assert "authorization" in reply.headers["access-control-allow-headers"]
    assert reply.headers["x-request-id"] == "r1"


def test_a_foreign_origin_is_403_without_cors_headers_before_auth_is_looked_at():
    call = exchange("POST", "/api/chat", origin="https://evil.example", authorization="Bearer s3cret")
    with pytest.raises(ApiError) as caught:
        admit(call, match("/api/chat"), lambda: LOCKED)
    assert (caught.value.status, caught.value.code) == (403, "origin_not_allowed")
    assert "access-control-allow-origin" not in call.error(caught.value).headers


def test_requests_without_an_origin_and_same_origin_requests_pass_the_origin_check():
    assert isinstance(admitted("POST", "/api/chat", LOCKED, authorization="Bearer s3cret"), Admitted)
    assert isinstance(admitted("POST", "/api/chat", LOCKED, origin=WORKER, authorization="Bearer s3cret"), Admitted)


@pytest.mark.parametrize(
    ("authorization", "ok"),
    [
        pytest.param("Bearer s3cret", True, id="bearer"),
        pytest.param("bearer   s3cret ", True, id="scheme-any-case-token-trimmed"),
        pytest.param(None, False, id="missing"),
        pytest.param("Bearer nope", False, id="wrong"),
        pytest.param("Basic s3cret", False, id="other-scheme"),
        pytest.param("s3cret", False, id="no-scheme"),
        pytest.param("Bearer s3cretX", False, id="longer"),
        pytest.param("Bearer " + "é" * 10_000, False, id="huge-non-ascii"),
    ],
)
def test_auth_takes_only_the_configured_bearer_token(authorization, ok):
    if ok:
        assert authorize(authorization, LOCKED) == "s3cret"
        return
    with pytest.raises(ApiError) as caught:
        authorize(authorization, LOCKED)
    assert (caught.value.status, caught.value.code, caught.value.headers) == (401, "unauthorized", {"www-authenticate": "Bearer"})


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
def test_without_a_token_or_its_public_var_v1s_chat_routes_are_closed_and_say_what_to_set(path):
    error = refusal("POST", path, CLOSED, authorization="Bearer anything")
    assert (error.status, error.code, error.headers) == (401, "unauthorized", {"www-authenticate": "Bearer"})
    assert "AUTH_TOKEN" in error.message and 'OPENAI_API_PUBLIC = "true"' in error.message
    assert isinstance(admitted("POST", path, CONFIG), Admitted)  # the var opens them
    token_only = Config(model=CLOSED.model, auth_token="s3cret")
    assert isinstance(admitted("POST", path, token_only, authorization="Bearer s3cret"), Admitted)  # so does the token
    assert isinstance(admitted("OPTIONS", path, CLOSED), Reply)  # a preflight is answered before


@pytest.mark.parametrize("path", ["/v1/models", "/api/chat", "/api/ui-chat", "/api/chat/raw"])
def test_the_pages_routes_and_the_model_list_stay_open_without_a_token(path):
    method = "GET" if path == "/v1/models" else "POST"
    assert isinstance(admitted(method, path, CLOSED), Admitted)


def test_the_public_var_is_read_as_true_or_false_only():
    read = {"MODEL": "@cf/zai-org/glm-4.7-flash"}
    assert Config.from_env(read.get).openai_api_public is False
    assert Config.from_env({**read, "OPENAI_API_PUBLIC": "TRUE"}.get).openai_api_public is True
    with pytest.raises(ConfigError):
        Config.from_env({**read, "OPENAI_API_PUBLIC": "yes"}.get)


def test_without_a_configured_token_any_authorization_is_accepted_and_none_is_the_key():
    assert authorize("Bearer whatever", CONFIG) is None and authorize(None, CONFIG) is None


def test_errors_render_in_this_projects_shape_with_the_request_id_and_cors():
    call = exchange("POST", "/api/chat", origin="https://app.example")
    call.cors = {"access-control-allow-origin": "https://app.example"}
    reply = call.error(ApiError("rate_limited", headers={"retry-after": "60"}))
    assert reply.status == 429 and reply.headers["retry-after"] == "60" and reply.headers["x-request-id"] == "r1"
    assert reply.headers["access-control-allow-origin"] == "https://app.example"
    assert json.loads(reply.body) == {"error": {"code": "rate_limited", "message": ERROR_CODES["rate_limited"].message}, "request_id": "r1"}


def test_every_code_has_one_status_and_one_generic_message_and_streams_use_the_same():
    for code, entry in ERROR_CODES.items():
        assert entry.code == code and 400 <= entry.status < 600
        assert entry.message.endswith(".") and "Traceback" not in entry.message
        assert ApiError(code).status == entry.status and ApiError(code).message == entry.message
    assert ERROR_MESSAGES == {code: entry.message for code, entry in ERROR_CODES.items() if entry.in_stream}
    assert ApiError("internal_error").message == ERROR_MESSAGES["internal_error"], "one internal_error message"


def test_a_code_outside_the_table_cannot_be_raised():
    with pytest.raises(KeyError):
        ApiError("teapot")


def test_each_encoder_carries_its_response_headers():
    for encoder in (SSEEncoder(), NDJSONEncoder(), UIMessageStreamEncoder()):
        headers = encoder.headers
        assert headers["content-type"] == encoder.content_type
        assert headers["cache-control"] == "no-cache, no-store, no-transform" and headers["content-encoding"] == "identity"
    assert UIMessageStreamEncoder().headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert "x-vercel-ai-ui-message-stream" not in SSEEncoder().headers


@pytest.mark.parametrize(
    ("method", "path", "name", "key"),
    [
        pytest.param("GET", "/api/chat/streams/abc", "chat-stream", "abc", id="read-an-answer"),
        pytest.param("DELETE", "/api/chat/streams/abc", "chat-stream", "abc", id="stop-an-answer"),
        pytest.param("GET", "/api/ui-chat/chat-1/stream", "ui-chat-stream", "chat-1", id="a-ui-chats-answer"),
    ],
)
def test_the_resumable_answers_paths_carry_their_id_to_the_handler(method, path, name, key):
    result = admitted(method, path)
    assert isinstance(result, Admitted) and (result.route.name, result.key) == (name, key)


def test_a_resumable_answers_path_takes_only_its_methods():
    assert refusal("POST", "/api/chat/streams/abc").headers["allow"] == "GET, DELETE, HEAD, OPTIONS"
    assert refusal("DELETE", "/api/ui-chat/chat-1/stream").headers["allow"] == "GET, HEAD, OPTIONS"
    assert refusal("GET", "/api/chat/streams/a/b").code == "not_found"
