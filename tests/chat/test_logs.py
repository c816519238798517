"""The Worker's log lines name their request (src/chat/logs.py), on CPython."""

from __future__ import annotations

import asyncio
import contextvars
import json

import pytest

from chat.logs import REQUEST_ID, async_error_fields, line, serving


def in_a_fresh_context(function, *args):
    return contextvars.Context().run(function, *args)


def test_a_line_names_the_request_being_served():
    def served() -> dict:
        serving("ab" * 16)
        return json.loads(line("chat_stream_started", model="m"))

    assert in_a_fresh_context(served) == {"event": "chat_stream_started", "request_id": "ab" * 16, "model": "m"}


def test_a_line_that_names_its_request_keeps_it_and_a_line_outside_any_request_names_none():
    def served() -> tuple[dict, dict]:
        serving("ab" * 16)
        return json.loads(line("chat_stream_ended", request_id="cd" * 16)), json.loads(line("x"))

    assert in_a_fresh_context(served)[0]["request_id"] == "cd" * 16
    assert json.loads(in_a_fresh_context(line, "conversation_expired")) == {"event": "conversation_expired"}


class StartedTask:
    """What asyncio's report hands over of a task: Task.get_context() and get_coro() (Python
    3.12 and later, as in the runtime's 3.14; this machine's CPython is 3.11, so a stand-in)."""

    def __init__(self, context: contextvars.Context, coroutine: object) -> None:
        self._context, self._coroutine = context, coroutine

    def get_context(self) -> contextvars.Context:
        return self._context

    def get_coro(self) -> object:
        return self._coroutine


def test_a_destroyed_task_is_reported_with_the_request_that_started_it_and_no_arguments():
    async def ticker() -> None:
        await asyncio.sleep(3600)

    def start() -> StartedTask:
        serving("ef" * 16)
        return StartedTask(contextvars.copy_context(), ticker())

    task = in_a_fresh_context(start)
    assert REQUEST_ID.get() is None  # the task's context is the request's, not this one
    fields = async_error_fields({"message": "Task was destroyed but it is pending!", "task": task})
    task.get_coro().close()
    assert fields == {"message": "Task was destroyed but it is pending!", "request_id": "ef" * 16,
                      "coroutine": "test_a_destroyed_task_is_reported_with_the_request_that_started_it_and_no_arguments.<locals>.ticker"}


def test_a_task_started_outside_any_request_names_none():
    task = in_a_fresh_context(lambda: StartedTask(contextvars.copy_context(), object()))
    assert async_error_fields({"message": "Task was destroyed but it is pending!", "task": task}) == {
        "message": "Task was destroyed but it is pending!", "coroutine": "object"}


@pytest.mark.parametrize(("context", "expected"), [
    pytest.param({"message": "Exception in callback Handle.run(user text)", "exception": ValueError("user text")},
                 {"message": "Exception in callback Handle.run", "detail": "ValueError"}, id="callback-arguments-left-out"),
    pytest.param({"message": "Future exception was never retrieved\nfuture: <Future finished exception=KeyError('x')>",
                  "future": asyncio.Future, "exception": KeyError("x")},
                 {"message": "Future exception was never retrieved", "detail": "KeyError"}, id="a-plain-future-names-no-request"),
    pytest.param({"message": "x" * 200}, {"message": "x" * 80}, id="bounded"),
    pytest.param({}, {"message": ""}, id="nothing-said"),
])
def test_an_asyncio_report_keeps_its_wording_and_the_exception_type_only(context, expected):
    assert async_error_fields(context) == expected
