"""The request: sending a turn, reading its answer as it streams, resuming or cancelling it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

from clients.chat_cli.defaults import DEFAULT_REASONING_EFFORT, MAX_ERROR_BODY, RESUME_ATTEMPTS, RESUME_BACKOFF_S
from clients.chat_cli.stream import (
    SHOWN_CODE,
    SHOWN_ID,
    SHOWN_RETRY,
    AnswerReader,
    MalformedStream,
    Outcome,
    ProtocolReader,
    RawReader,
    event_parser,
    shown,
    sse,
)
from clients.chat_cli.terminal import AnswerWriter, MarkdownWriter, TextSink, Writer


class TimedOut(Exception):
    pass


class Deadline:
    """The time left to wait for the next event; None waits for ever."""

    def __init__(self, seconds: float | None) -> None:
        self._seconds = seconds
        self._at = 0.0
        self.restart()

    def restart(self) -> None:
        if self._seconds is not None:
            self._at = time.monotonic() + self._seconds

    async def wait(self, awaitable: Any) -> Any:
        if self._seconds is None:
            return await awaitable
        left = self._at - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return await asyncio.wait_for(awaitable, left)
        except TimeoutError:
            raise TimedOut from None


async def http_error(response: httpx.Response, deadline: Deadline) -> Outcome:
    body = b""
    chunks = response.aiter_bytes()
    try:
        while len(body) <= MAX_ERROR_BODY:
            body += await deadline.wait(anext(chunks))
    except (StopAsyncIteration, TimedOut, httpx.TransportError):
        pass  # what arrived is all there is to read
    code, message, request_id = "http_error", f"The server answered {response.status_code}.", shown(response.headers.get("x-request-id"), SHOWN_ID)
    try:
        payload = json.loads(body)
        if shown(payload.get("error", {}).get("code"), SHOWN_CODE):
            code = payload["error"]["code"]
            given = payload["error"].get("message")
            message = given if isinstance(given, str) and given else message
            request_id = shown(payload.get("request_id"), SHOWN_ID) or request_id
    except (ValueError, AttributeError, RecursionError):
        pass  # not our JSON error: keep http_error
    return Outcome(kind="error", chunks=0, chars=0, code=code, message=message, request_id=request_id,
                   retry_after=shown(response.headers.get("retry-after"), SHOWN_RETRY))


async def ask(
    url: str, messages: list[dict[str, Any]], *, out: TextSink | Writer, raw: bool = False, token: str | None = None,
    cancel_after: int | None = None, timeout: float | None = None, resume: bool = False,
    reasoning_effort: str | None = DEFAULT_REASONING_EFFORT, tools: list[dict[str, Any]] | None = None,
    model: str | None = None, reader: AnswerReader | None = None,
) -> Outcome:
    """Stream one answer to `out` (its text, and each complete tool call as a JSON line);
    returns how it ended. Never raises for network or server behaviour."""
    base = url.rstrip("/")
    writer = out if isinstance(out, AnswerWriter | MarkdownWriter) else AnswerWriter(out)
    path = "/api/chat/raw" if raw else "/api/chat"
    headers = {"accept": "text/event-stream", "content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    reader = reader or (RawReader() if raw else ProtocolReader())
    deadline = Deadline(timeout)
    body: dict[str, Any] = {"messages": messages, **({"resumable": True} if resume else {})}
    if reasoning_effort is not None:
        body["reasoning_effort"] = reasoning_effort
    if tools is not None:
        body["tools"] = tools
    if model is not None:
        body["model"] = model
    # httpx's own timeouts would count the Worker's pings as progress; the deadline does not.
    async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=timeout or 30.0)) as client:
        request = client.build_request("POST", base + path, json=body, headers=headers)

        async def stop_on_server() -> None:
            # Leaving does not stop a resumable answer: this does, sent while the
            # connection is still open (the stop then reaches the model at once).
            try:
                await client.delete(f"{base}/api/chat/streams/{reader.stream_id}", headers=headers)
            except httpx.TransportError:
                pass  # nobody reading: the server stops it after its grace period

        on_cancel = stop_on_server if resume else None
        resumed = failures = 0
        try:
            outcome = await _exchange(client, request, reader, deadline, writer, cancel_after, on_cancel)
        except asyncio.CancelledError:
            # Ctrl-C: asyncio.run cancels this task; returning instead of raising ends the
            # run normally, with a status line and no traceback. The cancel is taken back
            # first, so that the stop below is not cancelled in its turn.
            _uncancel()
            if on_cancel is not None and reader.stream_id:
                await on_cancel()
            interrupted = reader.outcome("interrupted")
            return dataclasses.replace(interrupted, resumed=0) if resume else interrupted
        while resume and outcome.code in ("truncated", "timeout", "connection_failed") and reader.stream_id and failures < RESUME_ATTEMPTS:
            # The connection dropped: come back after the last event that arrived whole.
            await asyncio.sleep(RESUME_BACKOFF_S[failures])
            resumed, failures = resumed + 1, failures + 1
            events_before = reader.chunks, reader.last_event_id
            deadline.restart()
            headers_again = {**headers, "last-event-id": reader.last_event_id}
            request = client.build_request("GET", f"{base}/api/chat/streams/{reader.stream_id}", headers=headers_again)
            try:
                outcome = await _exchange(client, request, reader, deadline, writer, cancel_after, on_cancel)
            except asyncio.CancelledError:
                _uncancel()
                await on_cancel()  # resume is on, and the stream has a name
                return dataclasses.replace(reader.outcome("interrupted"), resumed=resumed)
            if (reader.chunks, reader.last_event_id) != events_before:
                failures = 0  # progress: the attempts count again from here
    if resume:
        outcome = dataclasses.replace(outcome, resumed=resumed)
    return outcome


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


async def _exchange(
    client: httpx.AsyncClient, request: httpx.Request, reader: AnswerReader,
    deadline: Deadline, out: Writer, cancel_after: int | None,
    on_cancel: Callable[[], Awaitable[None]] | None = None,
) -> Outcome:
    try:
        response = await deadline.wait(client.send(request, stream=True))
    except TimedOut:
        return reader.outcome("error", code="timeout")
    except httpx.TransportError as error:
        return reader.outcome("error", code="connection_failed", message=type(error).__name__)
    try:
        reader.request_id = reader.request_id or response.headers.get("x-request-id")
        if response.status_code != 200:
            return await http_error(response, deadline)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            return reader.outcome("error", code="unexpected_response", message="The answer is not an event stream.")
        outcome = await read_answer(response.aiter_raw(), reader, deadline, out, cancel_after)
        if outcome.kind in ("cancelled", "output_closed") and on_cancel is not None and reader.stream_id:
            await on_cancel()
        return outcome
    finally:
        await response.aclose()


async def read_answer(
    chunks: AsyncIterator[bytes], reader: AnswerReader, deadline: Deadline,
    out: Writer, cancel_after: int | None,
) -> Outcome:
    """Reads one response body's events: text and tool calls to `out`, until a terminal
    event (its outcome), --cancel-after, or the end of the body (truncated). Never raises
    for what the body holds."""
    parser = event_parser()
    try:
        while True:
            try:
                chunk = await deadline.wait(anext(chunks))
            except StopAsyncIteration:
                break  # an event the body did not finish is dropped, as the spec says
            try:
                events = parser.feed(chunk)  # keep-alive comments are no events
            except sse.SSEError as error:
                raise MalformedStream(str(error)) from None
            for event in events:
                deadline.restart()
                reading = reader.take(event)
                if reading.reasoning:
                    out.reasoning(reading.reasoning)
                if reading.text:
                    out.text(reading.text)
                if reading.tool_call is not None:
                    out.tool_call(reading.tool_call)
                if reading.outcome is not None:
                    return reading.outcome  # rule 2: nothing after a terminal event is read
                if cancel_after is not None and reader.chunks >= cancel_after:
                    return reader.outcome("cancelled")  # closing the response cancels upstream
    except TimedOut:
        return reader.outcome("error", code="timeout")
    except MalformedStream as error:
        return reader.outcome("error", code="malformed_stream", message=str(error))
    except RecursionError:  # a value nested too deep to handle (a usage, a call's input)
        return reader.outcome("error", code="malformed_stream", message="a value is nested too deep")
    except BrokenPipeError:
        return reader.outcome("output_closed")  # `| head` has what it wanted: leave
    except httpx.TransportError:
        pass  # the connection broke mid-body: the same as an end with no terminal event
    return reader.outcome("error", code="truncated")
