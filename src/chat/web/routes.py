"""The route table, and everything decided before a route's handler runs (404, health,
origin, CORS, preflight, 405, auth). Pure Python, so every rule here is unit-tested on
CPython; chat.app dispatches to the handler a route names.

Adding a route is one entry in ROUTES (and its handler, in the module the entry names): matching,
405's Allow, the methods a preflight allows, rate limiting and the error shape all derive from it.
The error shape is the surface's: every path under /v1/ is OpenAI's API, routes and 404s
alike, and answers in OpenAI's shape; every other path in this project's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chat.api.anthropic import anthropic_error_body
from chat.api.openai import openai_error_body
from chat.config import Config
from chat.web import http
from chat.web.errors import ApiError, error_body
from chat.web.exchange import ErrorRenderer, Exchange, Reply

ID = "{id}"  # a variable segment: a resumable answer's, a chat's, a stored response's or a conversation's id
ITEM = "{item}"  # a second one, after ID: an item's id in its conversation


@dataclass(frozen=True, kw_only=True)
class Route:
    """A path the Worker serves.

    `name` is the `route` of its log lines; `handler` names its function as
    `module:function` (in chat.app, imported by chat.app.handlers, which JS needs: a
    string keeps this table importable on CPython); None: answered here, before the
    configuration is read. A route
    that `spends_budget` starts inference or writes storage when POSTed to: each POST
    spends one unit of its client's rate-limit budget before its body is read (a GET of
    the same path, reading, does not). A route with a `public_var` fails closed.
    """

    name: str
    path: str
    methods: tuple[str, ...]
    handler: str | None
    spends_budget: bool = False
    # Without AUTH_TOKEN, served only when this [vars] entry (its name ends in _PUBLIC) is
    # "true": an API whose clients are programs is never open by accident (docs/deploying.md).
    public_var: str | None = None
    # A header that may carry the token instead of Authorization's bearer (x-api-key: Anthropic's).
    key_header: str | None = None

    @property
    def errors(self) -> ErrorRenderer:
        """How its ApiErrors are written: its surface's shape."""
        return surface_errors(self.path)

    @property
    def served(self) -> tuple[str, ...]:
        """Its methods, and HEAD wherever GET is: answered as GET is, without the body."""
        head = ("HEAD",) if "GET" in self.methods and "HEAD" not in self.methods else ()
        return (*self.methods, *head)

    @property
    def allowed(self) -> str:
        """Its methods as 405's Allow and a preflight's allowed methods list them."""
        return ", ".join((*self.served, "OPTIONS"))


ROUTES: tuple[Route, ...] = (
    Route(name="health", path="/health", methods=("GET", "HEAD"), handler=None),
    Route(name="chat", path="/api/chat", methods=("POST",), handler="chat.app.handlers:chat", spends_budget=True),
    Route(name="raw", path="/api/chat/raw", methods=("POST",), handler="chat.app.handlers:raw_chat", spends_budget=True),
    Route(name="ui-chat", path="/api/ui-chat", methods=("POST",), handler="chat.app.handlers:ui_chat", spends_budget=True),
    Route(name="chat-stream", path=f"/api/chat/streams/{ID}", methods=("GET", "DELETE"), handler="chat.app.handlers:stream_reader"),
    Route(name="ui-chat-stream", path=f"/api/ui-chat/{ID}/stream", methods=("GET",), handler="chat.app.handlers:stream_reader"),
    Route(name="openai-chat", path="/v1/chat/completions", methods=("POST",), handler="chat.app.handlers:openai_chat", spends_budget=True,
          public_var="OPENAI_API_PUBLIC"),
    Route(name="openai-responses", path="/v1/responses", methods=("POST",), handler="chat.app.handlers:openai_responses", spends_budget=True,
          public_var="OPENAI_API_PUBLIC"),
    # Stored responses (chat.resumable): read, stream again, delete, their input items, cancel.
    Route(name="openai-response", path=f"/v1/responses/{ID}", methods=("GET", "DELETE"), handler="chat.app.handlers:openai_stored_response",
          public_var="OPENAI_API_PUBLIC"),
    Route(name="openai-response-input-items", path=f"/v1/responses/{ID}/input_items", methods=("GET",),
          handler="chat.app.handlers:openai_response_input_items", public_var="OPENAI_API_PUBLIC"),
    Route(name="openai-response-cancel", path=f"/v1/responses/{ID}/cancel", methods=("POST",), handler="chat.app.handlers:openai_cancel_response",
          public_var="OPENAI_API_PUBLIC"),
    # Conversations (chat.conversation): each request that writes spends a unit, as storage is written.
    Route(name="openai-conversations", path="/v1/conversations", methods=("POST",), handler="chat.app.conversations:openai_conversations",
          spends_budget=True, public_var="OPENAI_API_PUBLIC"),
    Route(name="openai-conversation", path=f"/v1/conversations/{ID}", methods=("GET", "POST", "DELETE"),
          handler="chat.app.conversations:openai_conversation", public_var="OPENAI_API_PUBLIC"),
    Route(name="openai-conversation-items", path=f"/v1/conversations/{ID}/items", methods=("GET", "POST"),
          handler="chat.app.conversations:openai_conversation_items", spends_budget=True, public_var="OPENAI_API_PUBLIC"),
    Route(name="openai-conversation-item", path=f"/v1/conversations/{ID}/items/{ITEM}", methods=("GET", "DELETE"),
          handler="chat.app.conversations:openai_conversation_item", public_var="OPENAI_API_PUBLIC"),
    # Open: the chat page reads it, and it names only the models.
    Route(name="openai-models", path="/v1/models", methods=("GET",), handler="chat.app.handlers:openai_models"),
    # Anthropic's Messages API (docs/anthropic.md): its SDKs and Claude Code send the token
    # in x-api-key, or as a bearer token.
    Route(name="anthropic-messages", path="/v1/messages", methods=("POST",), handler="chat.app.handlers:anthropic_messages",
          spends_budget=True, public_var="OPENAI_API_PUBLIC", key_header="x-api-key"),
    Route(name="anthropic-count-tokens", path="/v1/messages/count_tokens", methods=("POST",),
          handler="chat.app.handlers:anthropic_count_tokens", spends_budget=True, public_var="OPENAI_API_PUBLIC", key_header="x-api-key"),
)

OPENAI_PREFIX = "/v1/"  # OpenAI's API: routes, and paths that are none
ANTHROPIC_PATH = "/v1/messages"  # ... but for Anthropic's, at this path and under it


def surface_errors(path: str) -> ErrorRenderer:
    """The error shape of the API surface `path` belongs to."""
    if path == ANTHROPIC_PATH or path.startswith(ANTHROPIC_PATH + "/"):
        return anthropic_error_body
    return openai_error_body if path.startswith(OPENAI_PREFIX) else error_body

_EXACT = {route.path: route for route in ROUTES if ID not in route.path}
_WITH_ID: list[tuple[Route, list[str]]] = [(route, route.path.split("/")) for route in ROUTES if ID in route.path]


@dataclass(frozen=True, kw_only=True)
class Match:
    """The route a path reached, and the id in it as sent (its handler checks it)."""

    route: Route
    key: str | None = None
    item: str | None = None  # the second variable segment, where the route has one


def match(path: str) -> Match | None:
    exact = _EXACT.get(path)
    if exact is not None:
        return Match(route=exact)
    segments = path.split("/")
    for route, pattern in _WITH_ID:
        if len(segments) != len(pattern):
            continue
        found: dict[str, str] = {}
        for segment, expected in zip(segments, pattern, strict=True):
            if expected in (ID, ITEM):  # empty too: its handler refuses it as it refuses any malformed id
                found[expected] = segment
            elif segment != expected:
                break
        else:
            return Match(route=route, key=found[ID], item=found.get(ITEM))
    return None


def error_renderer(path: str, found: Match | None) -> ErrorRenderer:
    """How errors on `path` are written: its surface's shape, a route's or not."""
    return surface_errors(found.route.path if found is not None else path)


@dataclass(frozen=True, kw_only=True)
class Admitted:
    """A request its handler may serve: `token` is the valid bearer token when the Worker
    requires one (the rate limiter's key), else None; `key` is the id in the path, as sent."""

    route: Route
    config: Config
    token: str | None
    key: str | None = None
    item: str | None = None


def admit(exchange: Exchange, found: Match | None, read_config: Callable[[], Config]) -> Admitted | Reply:
    """Decide everything before the handler: a Reply for health and preflights, Admitted
    for a request to serve. Raises ApiError (404, 403, 405, 401) and ConfigError.

    Health answers before the configuration is read, so a misconfigured Worker still
    says it is alive; CORS headers are earned by an allowed origin, so a 405 or 401 to
    an allowed origin is readable by its page and a 403 is not.
    """
    request = exchange.request
    if found is None:
        raise ApiError("not_found")
    route = found.route
    if route.handler is None and request.method in route.served:
        return exchange.json({"status": "ok"})
    config = read_config()
    origin = request.header("origin")
    if not http.origin_allowed(origin, request.url, config):
        raise ApiError("origin_not_allowed")
    exchange.cors = http.cors_headers(origin)
    if request.method == "OPTIONS":
        return exchange.reply(None, 204, http.preflight_headers(origin, route.allowed, request.header("access-control-request-headers")))
    if request.method not in route.served:
        raise ApiError("method_not_allowed", f"Use {' or '.join(route.methods)} here.", headers={"allow": route.allowed})
    token = authorize(request.header("authorization"), config,
                      key=request.header(route.key_header) if route.key_header is not None else None)
    if token is None and route.public_var is not None and not _is_public(route.public_var, config):
        raise ApiError("unauthorized", f"This API is closed: the Worker's operator has set neither the AUTH_TOKEN secret nor "
                       f'{route.public_var} = "true" in [vars].', headers={"www-authenticate": "Bearer"})
    return Admitted(route=route, config=config, token=token, key=found.key, item=found.item)


def _is_public(variable: str, config: Config) -> bool:
    # The *_PUBLIC entries Config reads, by name.
    return {"OPENAI_API_PUBLIC": config.openai_api_public}[variable]


def authorize(authorization: str | None, config: Config, *, key: str | None = None) -> str | None:
    """The token when the Worker requires one and `authorization` carries it as a bearer
    token, or `key` (a route's key header) is it; raises ApiError(unauthorized) when
    neither does. None when no token is required."""
    if config.auth_token is None:
        return None
    import hmac  # only Workers with a token pay for this import at start-up

    expected = config.auth_token.encode()
    scheme, _, token = (authorization or "").partition(" ")
    bearer = scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), expected)
    # Both are compared, whatever the first gave: the time taken says nothing of either.
    keyed = key is not None and hmac.compare_digest(key.strip().encode(), expected)
    if not (bearer or keyed):
        raise ApiError("unauthorized", headers={"www-authenticate": "Bearer"})
    return config.auth_token
