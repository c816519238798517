"""What the Worker and its Durable Object say to each other, typed at both ends.

The object is reached only through its binding, by RPC: `begin_answer(order)` with a
StartOrder as JSON, `read_answer(after, format, active_only, owner, peek)` (a ReadOrder's fields)
and `stop_answer()`; for a stored response of /v1/responses also `describe_response`,
`cancel_response`, `delete_response` and `response_history`, each with its owner. Each returns a Response: the reader's stream, a 204, or a Failure (the
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from chat.api.images import urls_in
from chat.model.call import ModelCall
from chat.resumable.formats import AnswerKind, ReaderFormat
from chat.web.errors import ApiError
from sse import ERROR_CODES, MAX_EVENT_ID_DIGITS, MAX_STORED_ANSWER_CHARS, ResponsesEncoder, portable_json

# What one order may take as a JS string: one RPC message carries at most 32 MiB (the Workers
# RPC docs, read 2026-12-02); the rest is room for the message's own framing.
MAX_ORDER_BYTES = 30 * 1024 * 1024


class MalformedOrder(ValueError):
    """A message to the object that its Worker would never send."""


@dataclass(frozen=True, kw_only=True)
class ResponseOrder:
    """What a stored response of /v1/responses is, besides its model call: its id, the
    Response object's fields that repeat the request, how it streams, who owns it, and
    its input items (JSON) for a later `previous_response_id`. `reader`: the request that
    creates it reads it (else it runs in the background and the object's head is the
    answer)."""

    response_id: str
    created_at: int
    echo: dict[str, Any]
    names: dict[str, tuple[str, str]]
    reasoning_summary: bool
    obfuscation: bool
    background: bool
    reader: bool
    owner: str
    input: list[Any]  # the input items as kept (chat.api.responses), stored as JSON by the object
    # A response of a conversation (chat.api.conversations): the object's key, and where its
    # own input begins; its input from there and its output are appended to it at its end.
    conversation: str | None = None
    own_from: int = 0

    def encoder(self, max_tokens: int | None) -> ResponsesEncoder:
        return ResponsesEncoder(created_at=self.created_at, response=self.echo, names=self.names, max_tokens=max_tokens,
                                reasoning_summary=self.reasoning_summary, response_id=self.response_id, background=self.background,
                                max_held_chars=MAX_STORED_ANSWER_CHARS)

    def as_order(self) -> dict[str, Any]:
        return {"response_id": self.response_id, "created_at": self.created_at, "echo": self.echo,
                "names": {name: list(pair) for name, pair in self.names.items()}, "reasoning_summary": self.reasoning_summary,
                "obfuscation": self.obfuscation, "background": self.background, "reader": self.reader, "owner": self.owner,
                "input": self.input, "conversation": self.conversation, "own_from": self.own_from}

    @staticmethod
    def from_order(order: Any) -> ResponseOrder:
        names = {_text(name): (_text(pair[0]), _text(pair[1])) for name, pair in order["names"].items()}
        created_at, own_from = order["created_at"], order.get("own_from", 0)
        if type(created_at) is not int or not isinstance(order["echo"], dict) or type(own_from) is not int:
            raise TypeError("created_at, echo, own_from")
        return ResponseOrder(response_id=_text(order["response_id"]), created_at=created_at, echo=order["echo"], names=names,
                             reasoning_summary=_flag(order["reasoning_summary"]), obfuscation=_flag(order["obfuscation"]),
                             background=_flag(order["background"]), reader=_flag(order["reader"]), owner=_text(order["owner"]),
                             input=_list(order["input"]), conversation=_optional_text(order.get("conversation")), own_from=own_from)


@dataclass(frozen=True, kw_only=True)
class StartOrder:
    """Start the answer to `call`; the first reader reads it in `format`."""

    request_id: str
    format: ReaderFormat
    call: ModelCall
    stream_id: str | None = None  # the object's id, which the answer's `meta` event names
    message_id: str | None = None  # the AI SDK message the answer continues
    response: ResponseOrder | None = None  # a stored response (format RESPONSES)

    @property
    def kind(self) -> AnswerKind:
        return self.format.kind

    def to_json(self) -> str:
        # UTF-8 text as it is: a stored response carries its turn twice (the model's call and
        # the input it keeps), and ASCII escapes would make an emoji 12 bytes a copy, past
        # what one RPC message may carry (the attack on issue 32).
        return portable_json({"request_id": self.request_id, "format": self.format.value, "stream_id": self.stream_id,
                              "message_id": self.message_id, "call": self.call.as_order(),
                              "response": None if self.response is None else self.response.as_order()})

    def sent(self, field: str) -> str:
        """The order as the object is handed it: text, as Python's RPC converts a byte array
        to bytes an element at a time (8 s for 8 MB, where the same order as a string took
        0.3 s on 2026-12-02). Past what one RPC message carries, a 400 naming `field`
        instead of the 500 the call would end in: a turn's limits bound what the model
        reads, and the order's JSON around it (thousands of empty parts) can be many times that."""
        text = self.to_json()
        if text.isascii():
            size = len(text)
        else:  # two bytes a UTF-16 unit once one character is not Latin-1; measured only when it might not fit
            size = 4 * len(text) if 4 * len(text) <= MAX_ORDER_BYTES else len(text.encode("utf-16-le", "surrogatepass"))
        if size > MAX_ORDER_BYTES:
            raise ApiError("invalid_request", f"{field}: this conversation takes {size} bytes to hand to the object that keeps "
                           f"it, and at most {MAX_ORDER_BYTES} fit; send it with store: false, or begin a new one.", param=field)
        return text

    @staticmethod
    def from_json(text: str) -> StartOrder:
        try:
            order = json.loads(text)
            response = order.get("response")
            start = StartOrder(request_id=_text(order["request_id"]), format=ReaderFormat(order["format"]),
                               stream_id=_optional_text(order.get("stream_id")), message_id=_optional_text(order.get("message_id")),
                               call=ModelCall.from_order(order["call"]),
                               response=None if response is None else ResponseOrder.from_order(response))
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as problem:
            raise MalformedOrder(type(problem).__name__) from None
        if (start.response is None) != (start.kind is not AnswerKind.RESPONSES):
            raise MalformedOrder("response")
        return start


@dataclass(frozen=True, kw_only=True)
class ReadOrder:
    """Read the answer from after event `after`; `active_only`: only while it is being
    made (the AI SDK's resume, which wants no finished answer)."""

    after: int = 0
    format: ReaderFormat = ReaderFormat.SSE
    active_only: bool = False
    owner: str = ""  # a stored response's reader (chat.resumable.client)
    peek: bool = False  # HEAD: the status a reader would get, and no reader

    @staticmethod
    def of(after: Any, format: Any, active_only: Any, owner: Any = "", peek: Any = False) -> ReadOrder:
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
        if not isinstance(owner, str):
            raise MalformedOrder("owner")
        if type(peek) is not bool:
            raise MalformedOrder("peek")
        return ReadOrder(after=after, format=reader_format, active_only=active_only, owner=owner, peek=peek)


@dataclass(frozen=True, kw_only=True)
class Failure:
    """The object's answer when it refuses: an error table code and the headers to pass on."""

    code: str
    headers: dict[str, str] = field(default_factory=dict)
    message: str | None = None  # the object's own, more specific than the table's
    param: str | None = None

    def to_json(self) -> str:
        return json.dumps({"code": self.code, "headers": self.headers, "message": self.message, "param": self.param})

    def reply(self) -> tuple[str, int, dict[str, str]]:
        """The body, status and headers of the Response an object answers with."""
        return self.to_json(), ERROR_CODES[self.code].status, {"content-type": "application/json"}

    @staticmethod
    def of(error: ApiError) -> Failure:
        return Failure(code=error.code, headers=dict(error.headers), message=error.message, param=error.param)

    @staticmethod
    def read(text: str) -> ApiError:
        """The ApiError a failure stands for; `internal_error` when it is not one the
        object writes (a code outside the table must never reach a client)."""
        try:
            payload = json.loads(text)
            code = payload["code"]
            headers = payload.get("headers") or {}
            message, param = payload.get("message"), payload.get("param")
            if (code in ERROR_CODES and all(isinstance(v, str) for v in headers.values())
                    and all(value is None or isinstance(value, str) for value in (message, param))):
                return ApiError(code, message, param=param, headers={str(k): v for k, v in headers.items()})
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        return ApiError("internal_error")


async def received(call: Awaitable[Any]) -> Any:
    """The JS Response an RPC call of an object returns (duck-typed: this module touches no JS);
    a Failure raised as its ApiError."""
    response = await call
    response = response.js_object if hasattr(response, "js_object") else response
    if response.status in (200, 204):
        return response
    raise Failure.read(str(await response.text()))


def parsed(text: Any) -> Any:
    """A JSON argument of an object's call. Raises MalformedOrder."""
    try:
        return json.loads(str(text))
    except ValueError:
        raise MalformedOrder("json") from None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not text")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


# A stored response's order carries its turn twice: the model's call, and the input items
# it keeps. Each image of the input that the call carries too travels once, as a reference
# to the call's image (its index among the call's distinct images, matched by their base64
# data: the Worker may have rewritten the header the client sent), and the object puts the
# call's back before keeping the input. One RPC message carries at most 32 MiB (the Workers RPC
# docs; raised from 1 MiB by cloudflare-docs PR 21856, April 2025; read 2026-12-02), and a
# JS string with one character outside Latin-1 takes two bytes for every character: images
# of 5.8 MB sent twice in a turn of 960,000 emoji (an order of about 39 MB, by its contents)
# failed locally (the attack on issue 32).


def images_by_reference(items: list[Any], messages: list[Any]) -> list[Any]:
    """`items` with each input_image whose data URL the call's `messages` carry replaced
    by `{"type": "input_image", "image_ref": k}`."""
    index = {_image_data(url): k for k, url in enumerate(_distinct_images(messages))}

    def referenced(part: Any) -> Any:
        k = index.get(_image_data(part["image_url"])) if part.get("type") == "input_image" and isinstance(part.get("image_url"), str) else None
        return part if k is None else {"type": "input_image", "image_ref": k}

    return [_with_images(item, referenced) for item in items]


def images_restored(items: list[Any], messages: list[Any]) -> list[Any]:
    """`items` as `images_by_reference` was given them. Raises MalformedOrder for a
    reference to no image of the call."""
    urls = _distinct_images(messages)

    def restored(part: Any) -> Any:
        if not isinstance(part, dict) or "image_ref" not in part:
            return part
        k = part["image_ref"]
        if type(k) is not int or not 0 <= k < len(urls):
            raise MalformedOrder("image_ref")
        return {"type": "input_image", "image_url": urls[k]}

    return [_with_images(item, restored) for item in items]


def _distinct_images(messages: list[Any]) -> list[str]:
    """The call's image data URLs, the first of each for the same data."""
    distinct: dict[str, str] = {}
    for url in urls_in(messages):
        distinct.setdefault(_image_data(url), url)
    return list(distinct.values())


def _image_data(url: str) -> str:
    return url.partition(",")[2]


def _with_images(item: Any, change: Callable[[Any], Any]) -> Any:
    content = item.get("content") if isinstance(item, dict) and item.get("type") == "message" else None
    return {**item, "content": [change(part) for part in content]} if isinstance(content, list) else item


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("not a list")
    return value


def _flag(value: Any) -> bool:
    if type(value) is not bool:
        raise TypeError("not a flag")
    return value
