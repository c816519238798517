"""One request as plain values, and the reply to it, before either becomes a JS object.

The JS request is converted once (chat.platform.edge), so everything that decides what to answer
(routing, CORS, auth, errors) works on these plain objects and is unit-tested on CPython.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chat.web import http
from chat.web.errors import ApiError, error_body

# How an API surface writes an ApiError: the response body for it, given the request id.
ErrorRenderer = Callable[[ApiError, str], str]


@dataclass(frozen=True, kw_only=True)
class PlainRequest:
    """What the Worker reads of a request besides its body. Header names are lower-case
    (as the Fetch API's Headers gives them); repeated headers arrive joined by ", "."""

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return http.path_of(self.url)

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


@dataclass(frozen=True, kw_only=True)
class Reply:
    """A response to send: `body` is text, None, or a stream the edge passes on as it is."""

    status: int
    headers: dict[str, str]
    body: Any = None


class Exchange:
    """One request being answered: its id, the CORS headers it earned (set by routing),
    and the error shape of the API surface its path belongs to."""

    def __init__(self, request: PlainRequest, *, render_error: ErrorRenderer = error_body, request_id: str | None = None) -> None:
        self.request = request
        self.request_id = request_id or os.urandom(16).hex()  # 128 random bits, like uuid4 (without importing uuid)
        self.cors: dict[str, str] = {}
        self.render_error = render_error

    def reply(self, body: Any = None, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
        return Reply(status=status, headers={**self.cors, "x-request-id": self.request_id, **(headers or {})}, body=body)

    def json(self, payload: object, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
        return self.reply(json.dumps(payload), status, {"content-type": http.JSON_TYPE, **(headers or {})})

    def error(self, error: ApiError) -> Reply:
        body = self.render_error(error, self.request_id)
        return self.reply(body, error.status, {"content-type": http.JSON_TYPE, **error.headers})
