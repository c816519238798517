"""Who is calling, and what they sent as JSON: the helpers every handler module shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from chat.api.images import MAX_IMAGE_TEXT_BYTES
from chat.api.validation import is_json_media_type, parse_json_body
from chat.config import Config
from chat.platform.edge import JsEdge
from chat.ratelimit.keys import ClientKey, client_key
from chat.web.errors import ApiError
from chat.web.exchange import Exchange
from chat.web.routes import Admitted

Checked = TypeVar("Checked")


def owner_of(admitted: Admitted) -> str:
    # Who may touch a stored response: the holder of the bearer token (its digest) when the
    # Worker requires one, else whoever has the response's id (chat.resumable.client).
    return "" if admitted.token is None else client_key(token=admitted.token, ip=None).value


def client_of(exchange: Exchange, admitted: Admitted) -> ClientKey:
    # The rate limiter's key for this client: its token's digest, or its address.
    return client_key(token=admitted.token, ip=exchange.request.header("cf-connecting-ip"))


async def read_json(edge: JsEdge, config: Config, check: Callable[[Any], Checked]) -> Checked:
    """A JSON body of at most the body limit (images and all), checked by `check`."""
    if not is_json_media_type(edge.request.header("content-type")):
        raise ApiError("unsupported_media_type")
    return check(parse_json_body(await edge.read_body(config.body_limit + MAX_IMAGE_TEXT_BYTES)))
