"""What a resumable answer is stored as, and what a reader receives: one place that maps
each to its encoder, its headers, its replay writer and the terminal of a reader cut off
from it. Pure Python."""

from __future__ import annotations

import json
from enum import Enum

from chat.web import http
from sse import (
    ERROR_CODES,
    ERROR_MESSAGES,
    MAX_STORED_EVENT_BYTES,
    Encoder,
    EventNumberer,
    EventStreamParser,
    NDJSONEncoder,
    ReplayFormat,
    ReplayWriter,
    ResponsesEncoder,
    SSEEncoder,
    StoredEvent,
    UIMessageStreamEncoder,
    openai_error,
    portable_json,
)

# The events that end a stored response of /v1/responses (a cancel ends it `response.failed`
# with the status `cancelled`).
RESPONSE_TERMINALS = frozenset({"response.completed", "response.incomplete", "response.failed"})


class AnswerKind(Enum):
    """How an answer's events are stored: the protocol's events ("chat", read as SSE or
    NDJSON), the AI SDK's UI message stream ("ui", one chat's answers in turn), or a
    stored response of /v1/responses ("responses")."""

    CHAT = "chat"
    UI = "ui"
    RESPONSES = "responses"

    def encoder(self, message_id: str | None = None) -> Encoder:
        """The encoder the answer is written with, once, before it is stored."""
        return UIMessageStreamEncoder(message_id=message_id) if self is AnswerKind.UI else SSEEncoder()

    def ends_with_terminal(self, events: list[StoredEvent]) -> bool:
        """Whether `events` (a page, in order) reach the answer's terminal event: `done` or
        `error` for the protocol's events, `[DONE]` for the UI message stream."""
        if not events:
            return False
        last = events[-1]
        if self is AnswerKind.RESPONSES:
            return last.type in RESPONSE_TERMINALS
        return last.data == "[DONE]" if self is AnswerKind.UI else last.type in ("done", "error")

    def cut(self, code: str, *, request_id: str, after: int, head: str | None = None) -> list[StoredEvent]:
        """The terminal events, numbered after event `after`, of an answer that ends with
        the error `code` outside its producer: a reader cut off from it, or an answer a
        restart interrupted. A stored response's continue its sequence numbers from its
        `head` (the Response object as it began, JSON)."""
        if self is AnswerKind.RESPONSES:
            if head is None:
                raise ValueError("a stored response has a head")
            # Event ids count from 1, sequence numbers from 0: the next is `after`.
            encoder: Encoder = ResponsesEncoder.resumed(json.loads(head), sequence=after)
        else:
            encoder = self.encoder()
        frames = encoder.error(code=code, message=ERROR_MESSAGES[code], request_id=request_id)
        return EventNumberer(last_id=after).number(frames.encode())


class ReaderFormat(Enum):
    """The encoding one reader receives."""

    SSE = "sse"
    NDJSON = "ndjson"
    UI = "ui"
    RESPONSES = "responses"  # a stored response's events, as /v1/responses streams them

    @staticmethod
    def negotiated(accept: str | None) -> ReaderFormat:
        """A protocol reader's format from its Accept header."""
        return ReaderFormat.NDJSON if http.prefers_ndjson(accept) else ReaderFormat.SSE

    @property
    def kind(self) -> AnswerKind:
        """The kind of answer this format reads."""
        return {ReaderFormat.UI: AnswerKind.UI, ReaderFormat.RESPONSES: AnswerKind.RESPONSES}.get(self, AnswerKind.CHAT)

    @property
    def headers(self) -> dict[str, str]:
        encoders: dict[ReaderFormat, type[Encoder]] = {
            ReaderFormat.SSE: SSEEncoder, ReaderFormat.NDJSON: NDJSONEncoder, ReaderFormat.UI: UIMessageStreamEncoder,
            ReaderFormat.RESPONSES: SSEEncoder,  # the same event stream headers
        }
        return encoders[self]().headers

    def writer(self) -> ReplayWriter:
        # A stored response's events are named events, written as the protocol's are.
        value: ReplayFormat = "sse" if self is ReaderFormat.RESPONSES else self.value
        return ReplayWriter(value)


class FinalResponse:
    """What a stored response read whole (`stream: false`) answers: its events, fed as they
    come, reduced to the last Response object and the error that ended it, if one did.
    Only the last terminal is kept, so this holds at most one event."""

    def __init__(self) -> None:
        self._parser = EventStreamParser(max_line_bytes=MAX_STORED_EVENT_BYTES, max_event_chars=MAX_STORED_EVENT_BYTES)
        self._response: str | None = None
        self._code: str | None = None

    def feed(self, data: bytes) -> None:
        for event in self._parser.feed(data):
            if event.type == "error":
                code = json.loads(event.data).get("code")
                self._code = code if code in ERROR_MESSAGES else "internal_error"
            elif event.type in RESPONSE_TERMINALS:
                self._response = event.data

    def result(self) -> tuple[str, int]:
        """The body (the Response object, or OpenAI's error object) and its status, as
        `stream: false` answers a response that is not stored."""
        code = self._code if self._response is not None else "internal_error"  # no terminal: cut short
        if code is not None:
            return json.dumps(openai_error(code, ERROR_MESSAGES[code])), ERROR_CODES[code].status
        assert self._response is not None
        return portable_json(json.loads(self._response)["response"]), 200
