"""HTTP details shared by every route: CORS, content negotiation, header sets. Pure Python."""

from __future__ import annotations

from chat.config import Config

SSE_TYPE = "text/event-stream; charset=utf-8"
JSON_TYPE = "application/json; charset=utf-8"

CORS_HEADERS = "authorization, content-type, accept, last-event-id"

# A Durable Object id as its namespace writes it: 64 lowercase hex digits.
STREAM_ID_LENGTH = 64


# Request URLs in a Worker are always absolute ("https://host/path?query"). These two
# helpers read them without urllib.parse, whose import (with ipaddress) costs more
# start-up time in Pyodide than all of this Worker's own modules.


def _split(url: str) -> tuple[str, str, str]:
    """(scheme, authority, path) of an absolute URL; query and fragment dropped."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        scheme, rest = "", url
    for mark in "?#":
        rest = rest.partition(mark)[0]
    authority, slash, path = rest.partition("/")
    return scheme, authority, slash + path


def query_of(url: str) -> dict[str, str]:
    """The query parameters of an absolute URL, each as first given. Values are taken as
    they are: the parameters read here are words and numbers, so a percent-encoded one is
    refused where it is checked."""
    query = url.partition("#")[0].partition("?")[2]
    found: dict[str, str] = {}
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if name:
            found.setdefault(name, value)
    return found


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of an absolute URL."""
    scheme, authority, _ = _split(url)
    return f"{scheme.lower()}://{authority.lower()}"


def path_of(url: str) -> str:
    """The path of an absolute URL ("/" when it has none)."""
    return _split(url)[2] or "/"


def origin_allowed(origin: str | None, request_url: str, config: Config) -> bool:
    """No Origin (curl, server-to-server) and same-origin requests are always allowed."""
    if origin is None or not config.allowed_origins or origin == origin_of(request_url):
        return True
    return origin in config.allowed_origins or "*" in config.allowed_origins


def cors_headers(origin: str | None) -> dict[str, str]:
    if origin is None:
        return {}
    return {
        "access-control-allow-origin": origin,
        "access-control-expose-headers": "x-request-id, retry-after, x-skipped-frames",
        "vary": "Origin",
    }


# A header name is an RFC 9110 token; a longer request list than this is not a client's.
_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")
MAX_REQUESTED_HEADERS_CHARS = 2048


def allowed_headers(requested: str | None) -> str:
    """The headers a preflight allows: ours, and those the browser asks for when they are
    well-formed names. SDKs send headers of their own (OpenAI's JS SDK sends several
    `x-stainless-*`) and a preflight that left them out would fail the request; none of
    them changes what the Worker does, and credentials stay the bearer token alone."""
    if not requested or len(requested) > MAX_REQUESTED_HEADERS_CHARS:
        return CORS_HEADERS
    names = [name.strip().lower() for name in requested.split(",")]
    if not all(name and set(name) <= _TOKEN_CHARS for name in names):
        return CORS_HEADERS
    ours = CORS_HEADERS.split(", ")
    return ", ".join(dict.fromkeys([*ours, *names]))


def preflight_headers(origin: str | None, methods: str, requested_headers: str | None = None) -> dict[str, str]:
    return {
        **cors_headers(origin),
        "access-control-allow-methods": methods,
        "access-control-allow-headers": allowed_headers(requested_headers),
        "access-control-max-age": "86400",
    }


def prefers_ndjson(accept: str | None) -> bool:
    """True when the Accept header ranks NDJSON above the event stream."""
    if not accept:
        return False
    ranks: dict[str, float] = {}
    for position, item in enumerate(accept.split(",")):
        media_type, *params = (part.strip() for part in item.split(";"))
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        # Earlier entries win ties, as most servers read Accept.
        ranks.setdefault(media_type.lower(), quality - position * 1e-6)
    ndjson = ranks.get("application/x-ndjson", -1.0)
    sse = max(ranks.get("text/event-stream", -1.0), ranks.get("*/*", -1.0) - 1.0)
    return ndjson > 0 and ndjson > sse


def is_stream_id(value: str) -> bool:
    return len(value) == STREAM_ID_LENGTH and all(char in "0123456789abcdef" for char in value)
