"""Stop sequences, found in text that arrives in pieces (OpenAI's `stop`).

Workers AI's models take no stop sequences, so the Worker finds them in the answer as it
streams: text that could be the start of a stop sequence is held back until the next
piece shows whether it is one, and the answer ends just before the first that appears.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["StopScanner"]


class StopScanner:
    """Passes text through until the first of `stops` appears. `matched` turns true once
    one did; the text before it is the last `feed` returns. Holds back at most the
    longest stop sequence's length minus one character."""

    def __init__(self, stops: Sequence[str]) -> None:
        """Raises ValueError if `stops` is empty or holds an empty string."""
        if not stops or not all(stops):
            raise ValueError("stop sequences must be non-empty strings")
        self._stops = tuple(stops)
        self._held = ""
        self.matched = False
        self.sequence: str | None = None  # the one that matched: of those found, the first to begin

    def feed(self, text: str) -> str:
        """The part of `held + text` that is certainly answer text."""
        if self.matched:
            return ""
        pending = self._held + text
        found = [(index, stop) for stop, index in ((stop, pending.find(stop)) for stop in self._stops) if index >= 0]
        if found:
            at, self.sequence = min(found, key=lambda match: match[0])
            self.matched = True
            self._held = ""
            return pending[:at]
        keep = max(self._prefix_at_end(pending, stop) for stop in self._stops)
        self._held = pending[len(pending) - keep :]
        return pending[: len(pending) - keep]

    def flush(self) -> str:
        """The text held back, at the end of the answer (it began no stop sequence)."""
        held, self._held = self._held, ""
        return held

    @staticmethod
    def _prefix_at_end(text: str, stop: str) -> int:
        # The longest proper prefix of `stop` that `text` ends with.
        for length in range(min(len(stop) - 1, len(text)), 0, -1):
            if text.endswith(stop[:length]):
                return length
        return 0
