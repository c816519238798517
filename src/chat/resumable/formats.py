"""What a resumable answer is stored as, and what a reader receives: one place that maps
each to its encoder, its headers and its replay writer. Pure Python."""

from __future__ import annotations

from enum import Enum

from chat.web import http
from sse import Encoder, NDJSONEncoder, ReplayFormat, ReplayWriter, SSEEncoder, StoredEvent, UIMessageStreamEncoder


class AnswerKind(Enum):
    """How an answer's events are stored: the protocol's events ("chat", read as SSE or
    NDJSON) or the AI SDK's UI message stream ("ui", one chat's answers in turn)."""

    CHAT = "chat"
    UI = "ui"

    def encoder(self, message_id: str | None = None) -> Encoder:
        """The encoder the answer is written with, once, before it is stored."""
        return UIMessageStreamEncoder(message_id=message_id) if self is AnswerKind.UI else SSEEncoder()

    def ends_with_terminal(self, events: list[StoredEvent]) -> bool:
        """Whether `events` (a page, in order) reach the answer's terminal event: `done` or
        `error` for the protocol's events, `[DONE]` for the UI message stream."""
        if not events:
            return False
        last = events[-1]
        return last.data == "[DONE]" if self is AnswerKind.UI else last.type in ("done", "error")


class ReaderFormat(Enum):
    """The encoding one reader receives."""

    SSE = "sse"
    NDJSON = "ndjson"
    UI = "ui"

    @staticmethod
    def negotiated(accept: str | None) -> ReaderFormat:
        """A protocol reader's format from its Accept header."""
        return ReaderFormat.NDJSON if http.prefers_ndjson(accept) else ReaderFormat.SSE

    @property
    def kind(self) -> AnswerKind:
        """The kind of answer this format reads."""
        return AnswerKind.UI if self is ReaderFormat.UI else AnswerKind.CHAT

    @property
    def headers(self) -> dict[str, str]:
        encoders: dict[ReaderFormat, type[Encoder]] = {
            ReaderFormat.SSE: SSEEncoder, ReaderFormat.NDJSON: NDJSONEncoder, ReaderFormat.UI: UIMessageStreamEncoder,
        }
        return encoders[self]().headers

    def writer(self) -> ReplayWriter:
        value: ReplayFormat = self.value
        return ReplayWriter(value)
