"""What the Worker and its Durable Object say to each other, typed at both ends.

The object is reached only through its binding, by RPC: `begin_answer(order)` with a
StartOrder as JSON, `read_answer(after, format, active_only)` (a ReadOrder's fields) and
`stop_answer()`. Each returns a Response: the reader's stream, a 204, or a Failure (the
error table's code) that the Worker raises as that ApiError. An exception raised in the
object reaches the Worker as a JsException whose text is the object's traceback, so the
object returns its failures instead, and that text is never passed on.

Each message is written and read here, so the two sides cannot drift apart and a
malformed one is refused, never half-read. Pure Python. (A ReadableStream returned over
Python RPC was checked in the pinned runtime, workerd 1.20261117.1, on 2026-12-01; the
Workers RPC docs list ReadableStream among the types RPC carries.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from chat.model.call import ModelCall
from chat.resumable.formats import AnswerKind, ReaderFormat
from chat.web.errors import ApiError
from sse import ERROR_CODES, MAX_EVENT_ID_DIGITS


class MalformedOrder(ValueError):
    """A message to the object that its Worker would never send."""


@dataclass(frozen=True, kw_only=True)
class StartOrder:
    """Start the answer to `call`; the first reader reads it in `format`."""

    request_id: str
    format: ReaderFormat
    call: ModelCall
    stream_id: str | None = None  # the object's id, which the answer's `meta` event names
    message_id: str | None = None  # the AI SDK message the answer continues

    @property
    def kind(self) -> AnswerKind:
        return self.format.kind

    def to_json(self) -> str:
        return json.dumps({"request_id": self.request_id, "format": self.format.value, "stream_id": self.stream_id,
                           "message_id": self.message_id, "call": self.call.as_order()})

    @staticmethod
    def from_json(text: str) -> StartOrder:
        try:
            order = json.loads(text)
            return StartOrder(request_id=_text(order["request_id"]), format=ReaderFormat(order["format"]),
                              stream_id=_optional_text(order.get("stream_id")), message_id=_optional_text(order.get("message_id")),
                              call=ModelCall.from_order(order["call"]))
        except (ValueError, KeyError, TypeError, AttributeError) as problem:
            raise MalformedOrder(type(problem).__name__) from None


@dataclass(frozen=True, kw_only=True)
class ReadOrder:
    """Read the answer from after event `after`; `active_only`: only while it is being
    made (the AI SDK's resume, which wants no finished answer)."""

    after: int = 0
    format: ReaderFormat = ReaderFormat.SSE
    active_only: bool = False

    @staticmethod
    def of(after: Any, format: Any, active_only: Any) -> ReadOrder:
        """The order from the values the object was called with, checked."""
        if type(after) is float and after.is_integer():
            after = int(after)  # a JS number may arrive as a float
        if type(after) is not int or not 0 <= after < 10**MAX_EVENT_ID_DIGITS:
            raise MalformedOrder("after")
        if type(active_only) is not bool:
            raise MalformedOrder("active_only")
        try:
            reader_format = ReaderFormat(format)
        except ValueError:
            raise MalformedOrder("format") from None
        return ReadOrder(after=after, format=reader_format, active_only=active_only)


@dataclass(frozen=True, kw_only=True)
class Failure:
    """The object's answer when it refuses: an error table code and the headers to pass on."""

    code: str
    headers: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"code": self.code, "headers": self.headers})

    @staticmethod
    def of(error: ApiError) -> Failure:
        return Failure(code=error.code, headers=dict(error.headers))

    @staticmethod
    def read(text: str) -> ApiError:
        """The ApiError a failure stands for; `internal_error` when it is not one the
        object writes (a code outside the table must never reach a client)."""
        try:
            payload = json.loads(text)
            code = payload["code"]
            headers = payload.get("headers") or {}
            if code in ERROR_CODES and all(isinstance(v, str) for v in headers.values()):
                return ApiError(code, headers={str(k): v for k, v in headers.items()})
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        return ApiError("internal_error")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not text")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)
