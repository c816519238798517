"""Where an answer's parts start and end: decided here, once, for every encoder.

An answer is a sequence of parts (sse._events.Part): runs of text and of reasoning, and
tool calls. The rules:

- text or reasoning that follows a part of another kind starts a new part and ends the
  text or reasoning part before it;
- a tool call starts a part of its own and ends the text or reasoning part before it, but
  not the calls before it: an upstream may still send pieces of one (the answer then
  fails), and a client runs a call it sees ended (Codex CLI runs a closed function call);
- a call ends once its input is whole and text or reasoning follows it, or the answer
  ends whole;
- when the answer is complete, every open part ends WHOLE, in the order they started;
  when it was cut (at the token budget, by a filter), the part it was cut in ends CUT;
  when it failed, every open part ends FAILED.

`writing` is the one piece of state a caller reads per token: the kind of the part the
next delta goes to, None before the first part and after the end.
"""

from __future__ import annotations

from ._encoders import Encoder
from ._events import Part, PartEnding, PartKind, ToolCall, ToolCallStart

__all__ = ["AnswerParts"]

TEXT = PartKind.TEXT
REASONING = PartKind.REASONING
TOOL_CALL = PartKind.TOOL_CALL
WHOLE = PartEnding.WHOLE


class AnswerParts:
    """The parts of one answer, and the encoder's frames for their starts and ends."""

    __slots__ = ("_encoder", "_open", "_started", "_unfinished_calls", "_whole_calls", "writing")

    def __init__(self, encoder: Encoder) -> None:
        self._encoder = encoder
        self.writing: PartKind | None = None
        self._open: Part | None = None  # the text or reasoning part deltas go to
        self._unfinished_calls: dict[int, Part] = {}  # call parts whose input is not whole yet, by call index
        self._whole_calls: list[Part] = []  # call parts whole and not ended: the next text or the end ends them
        self._started = 0

    @property
    def count(self) -> int:
        """Parts started so far."""
        return self._started

    def start(self, kind: PartKind) -> str:
        """Starts a text or reasoning part (`writing` is another kind)."""
        out = self._end([*self._whole_calls, *self._open_part()], WHOLE)
        self._whole_calls = []
        part = self._open = self._next(kind)
        self.writing = kind
        return out + self._encoder.part_start(part, "")

    def start_call(self, call: ToolCallStart, padding: str) -> str:
        """Starts a tool call's part; `padding` rides on its first frame."""
        out = self._end(self._open_part(), WHOLE)
        self._open = None
        part = self._unfinished_calls[call.index] = self._next(TOOL_CALL, call)
        self.writing = TOOL_CALL
        return out + self._encoder.part_start(part, padding)

    def call_whole(self, call: ToolCall) -> str:
        """A call's input is whole: the encoder's frame for it; its part ends later."""
        self._whole_calls.append(self._unfinished_calls.pop(call.index))
        return self._encoder.tool_call(call)

    def finish(self, *, cut: bool) -> str:
        """Ends every open part as the answer ends complete; `cut`: the last part started
        was cut off."""
        parts = sorted([*self._whole_calls, *self._unfinished_calls.values(), *self._open_part()], key=_number)
        last = [parts.pop()] if cut and parts and parts[-1].number == self._started - 1 else []
        return self._end(parts, WHOLE) + self._end(last, PartEnding.CUT) + self._closed()

    def abandon(self) -> str:
        """Ends every open part FAILED: the answer failed."""
        parts = sorted([*self._whole_calls, *self._unfinished_calls.values(), *self._open_part()], key=_number)
        return self._end(parts, PartEnding.FAILED) + self._closed()

    def _closed(self) -> str:
        self._open = None
        self._unfinished_calls.clear()
        self._whole_calls = []
        self.writing = None
        return ""

    def _open_part(self) -> list[Part]:
        return [] if self._open is None else [self._open]

    def _next(self, kind: PartKind, call: ToolCallStart | None = None) -> Part:
        part = Part(kind=kind, number=self._started, call=call)
        self._started += 1
        return part

    def _end(self, parts: list[Part], ending: PartEnding) -> str:
        if not parts:
            return ""
        end = self._encoder.part_end
        return "".join([end(part, ending) for part in sorted(parts, key=_number)])


def _number(part: Part) -> int:
    return part.number
