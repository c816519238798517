"""What a Reframer asks before it reports an answer as finished.

The core knows nothing of schemas: a caller that wants the answer's text checked (JSON
mode, chat.output) hands the Reframer an AnswerCheck, which sees every piece of text the
client is sent and, when the model has ended of its own accord, says whether the whole is
what was asked for.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["AnswerCheck"]


class AnswerCheck(Protocol):
    # Whether the request offered tools: an answer that called them has its final text
    # still to come, and is not judged. Without tools offered, a call is not the answer.
    tools_offered: bool

    def feed(self, text: str) -> None:
        """A piece of the answer's text, as the client is sent it."""

    def verdict(self) -> str | None:
        """None when the text fed so far is a finished answer as asked; else the error
        code (of ERROR_MESSAGES) that ends the stream instead of `done`."""
