"""Routing on plain values: which route a request reached, and everything decided before
its handler runs (404, health, origin, CORS, preflight, 405, auth). Pure Python, so every
rule here is unit-tested on CPython; the edge (chat.edge) only converts values."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import http
from .api_errors import ApiError
from .config import Config
from .exchange import Exchange, Reply
from .openai_api import openai_error_body


@dataclass(frozen=True, kw_only=True)
class Route:
    """A path the Worker serves: its handler's name (also the `route` of log lines) and
    its methods (OPTIONS, the CORS preflight, is allowed everywhere)."""

    name: str
    methods: tuple[str, ...]


# The resumable answers' paths, each with an id in it (http.stream_path reads them).
STREAM_ROUTES: dict[str, Route] = {
    "chat-stream": Route(name="chat-stream", methods=("GET", "DELETE")),  # /api/chat/streams/{stream_id}
    "ui-chat-stream": Route(name="ui-chat-stream", methods=("GET",)),  # /api/ui-chat/{chat_id}/stream
}


ROUTES: dict[str, Route] = {
    "/health": Route(name="health", methods=("GET", "HEAD")),
    "/api/chat": Route(name="chat", methods=("POST",)),
    "/api/chat/raw": Route(name="raw", methods=("POST",)),
    "/api/ui-chat": Route(name="ui-chat", methods=("POST",)),
    "/v1/chat/completions": Route(name="openai-chat", methods=("POST",)),
    "/v1/models": Route(name="openai-models", methods=("GET",)),
}

# Paths under this prefix are OpenAI's API: their errors, 404s included, take its shape.
OPENAI_PREFIX = "/v1/"


@dataclass(frozen=True, kw_only=True)
class Admitted:
    """A request its handler may serve: `token` is the valid bearer token when the Worker
    requires one (the rate limiter's key), else None; `key` is the id in the path of a
    resumable answer's route, as sent (its handler checks it)."""

    route: Route
    config: Config
    token: str | None
    key: str | None = None


def admit(exchange: Exchange, read_config: Callable[[], Config]) -> Admitted | Reply:
    """Decide everything before the handler: a Reply for health and preflights, Admitted
    for a request to serve. Raises ApiError (404, 403, 405, 401) and ConfigError.

    Health answers before the configuration is read, so a misconfigured Worker still
    says it is alive; CORS headers are earned by an allowed origin, so a 405 or 401 to
    an allowed origin is readable by its page and a 403 is not.
    """
    request = exchange.request
    if request.path.startswith(OPENAI_PREFIX):
        exchange.render_error = openai_error_body
    route = ROUTES.get(request.path)
    key = None
    if route is None:
        target = http.stream_path(request.path)
        if target is None:
            raise ApiError("not_found")
        route, key = STREAM_ROUTES[target[0]], target[1]
    if route.name == "health" and request.method in route.methods:
        return exchange.json({"status": "ok"})
    config = read_config()
    origin = request.header("origin")
    if not http.origin_allowed(origin, request.url, config):
        raise ApiError("origin_not_allowed")
    exchange.cors = http.cors_headers(origin)
    if request.method == "OPTIONS":
        return exchange.reply(None, 204, http.preflight_headers(origin, request.header("access-control-request-headers")))
    if request.method not in route.methods:
        raise ApiError("method_not_allowed", f"Use {' or '.join(route.methods)} here.",
                       headers={"allow": ", ".join((*route.methods, "OPTIONS"))})
    return Admitted(route=route, config=config, token=authorize(request.header("authorization"), config), key=key)


def authorize(authorization: str | None, config: Config) -> str | None:
    """The bearer token when the Worker requires one and `authorization` carries it;
    raises ApiError(unauthorized) when it does not. None when no token is required."""
    if config.auth_token is None:
        return None
    import hmac  # only Workers with a token pay for this import at start-up

    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), config.auth_token.encode()):
        raise ApiError("unauthorized", headers={"www-authenticate": "Bearer"})
    return config.auth_token
