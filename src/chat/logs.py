"""Structured logs: one JSON object a line, never message text or generated text.

Every line written while a request is being served carries its `request_id`, so that an
operator (and the test harness, tests/harness/output.py) can tell which request wrote it:
the request sets `REQUEST_ID` once (`serving`), and every coroutine and asyncio task it
starts inherits it. Code called back from JS (a stream's transform) runs outside that
context and names its request itself, as it always has.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import Any

REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)

# What an asyncio error report may say of itself: the start of its message, which is
# asyncio's own wording ("Task was destroyed but it is pending!"), never what follows a
# "(" or ":" there (a callback's arguments, which may hold a user's text).
MAX_ASYNC_MESSAGE = 80


def serving(request_id: str) -> None:
    """Name the request the current task serves, for every line it and its tasks write."""
    REQUEST_ID.set(request_id)


def line(event: str, **fields: Any) -> str:
    request_id = REQUEST_ID.get()
    if request_id is not None and "request_id" not in fields:
        fields = {"request_id": request_id, **fields}
    return json.dumps({"event": event, **fields}, separators=(",", ":"), default=str)


def log(event: str, **fields: Any) -> None:
    print(line(event, **fields))


def async_error_fields(context: dict[str, Any]) -> dict[str, Any]:
    """What a report of asyncio's (the `context` of `loop.call_exception_handler`) may put in
    a log line: its message's start, the coroutine's name, the exception's type, and the
    request of the task it concerns. A task carries the context it was started in, so a
    task destroyed long after its request ended still names that request."""
    message = str(context.get("message", ""))
    for stop in ("(", ":", "\n"):
        message = message.split(stop, 1)[0]
    fields: dict[str, Any] = {"message": message.strip()[:MAX_ASYNC_MESSAGE]}
    task = context.get("task") or context.get("future")
    get_context = getattr(task, "get_context", None)
    if get_context is not None:
        if (request_id := get_context().get(REQUEST_ID)) is not None:
            fields["request_id"] = request_id
        coroutine = task.get_coro()  # type: ignore[union-attr]
        fields["coroutine"] = getattr(coroutine, "__qualname__", type(coroutine).__name__)
    exception = context.get("exception")
    if exception is not None:
        fields["detail"] = type(exception).__name__
    return fields
