"""Reading the Worker's answer from its event stream, with no I/O: the project's own
parser, the outcome an ending stands for, and the readers of our protocol and of raw frames."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

from clients.chat_cli.defaults import (
    EXIT_CANCELLED,
    EXIT_COMPLETE,
    EXIT_INTERRUPTED,
    EXIT_NOT_WHOLE,
    EXIT_STREAM_ERROR,
    MAX_LINE_CHARS,
)
from clients.chat_cli.terminal import OWN_LINE, visible

# How an answer that ended with `done` ([DONE] with --raw) ended, by its finish_reason
# (docs/protocol.md). Raw frames are the model's own, so other OpenAI-compatible servers'
# names for the same endings are read too (the Worker maps them for /api/chat): Anthropic's
# end_turn, max_tokens and stop_sequence, TGI's eos_token, llama.cpp's eos.
WHOLE_ENDINGS = frozenset({"stop", "tool_calls", "function_call", "eos", "eos_token", "end_turn", "stop_sequence"})
CUT_SHORT_ENDINGS = {"length": "length", "max_tokens": "length", "content_filter": "content_filter"}
# vLLM streams a generation that failed as finish_reason "error"; the Worker sends an
# `error` event instead (older Workers sent `done` with it).
FAILED_ENDING = "error"
SHOWN_REASON = re.compile(r"[a-z_]{1,32}")  # an unknown reason is shown as sent when it reads like one



class MalformedStream(Exception):
    """The body cannot be read as an event stream (a line over the cap)."""


# The project's own event-stream parser (src/sse, plain Python with no I/O: the one the
# Worker reads Workers AI with), imported from the repository the CLI lives in, as the
# image rules are. One reader of the WHATWG rules, not a second copy that could drift.
REPOSITORY_SOURCE = Path(__file__).resolve().parents[2] / "src"


def repository_module(name: str) -> ModuleType:
    """A module of the Worker's src/. Raises ImportError when the CLI runs outside its
    repository."""
    if str(REPOSITORY_SOURCE) not in sys.path:
        sys.path.insert(0, str(REPOSITORY_SOURCE))
    return import_module(name)


try:
    sse = repository_module("sse")
except ImportError:
    print(f"chat_cli: the event-stream parser, {REPOSITORY_SOURCE / 'sse'}, is not there: run the CLI from its repository",
          file=sys.stderr)
    raise SystemExit(2) from None  # EXIT_USAGE
Event = sse.Event


def event_parser() -> Any:
    """A parser for one response body; a line or an event over MAX_LINE_CHARS is a
    MalformedStream (the Worker's events are far smaller)."""
    return sse.EventStreamParser(max_line_bytes=MAX_LINE_CHARS, max_event_chars=MAX_LINE_CHARS)


# The kinds of outcome for an answer that ended with `done` ([DONE] with --raw).
ENDINGS = ("complete", "cut_short", "unknown_ending", "empty")


@dataclass(frozen=True, kw_only=True)
class Outcome:
    kind: str  # one of ENDINGS, or "cancelled", "output_closed", "interrupted" or "error"
    chunks: int
    chars: int
    tool_calls: int = 0  # complete tool calls the answer made
    finish_reason: str | None = None  # of cut_short and unknown_ending: the reason shown
    skipped: int = 0  # upstream frames that could not be read (`done.skipped`)
    code: str | None = None
    message: str | None = None
    request_id: str | None = None
    retry_after: str | None = None
    resumed: int | None = None  # reconnections, with --resume
    answer: dict[str, Any] | None = None  # a complete answer as an assistant message, for --history
    model: str | None = None  # the model that answered, as `meta` named it
    tokens: tuple[int, int] | None = None  # prompt and completion tokens, as `done` counted them
    stopped_by: str | None = None  # of a complete answer: the finish_reason given

    @property
    def status_line(self) -> str:
        if self.kind in ENDINGS:
            line = self.kind if self.finish_reason is None else f"{self.kind}: {self.finish_reason}"
            line += f" chunks={self.chunks} chars={self.chars}"
            if self.tool_calls:
                line += f" tool_calls={self.tool_calls}"
            if self.skipped:
                line += f" skipped={self.skipped}"
            if self.model is not None:
                line += f" model={self.model}"
            if self.tokens is not None:
                line += f" tokens={self.tokens[0]}+{self.tokens[1]}"
            if self.stopped_by is not None:
                line += f" finish={self.stopped_by}"
        elif self.kind in ("cancelled", "output_closed", "interrupted"):
            line = f"{self.kind} after {self.chunks} chunks"
        else:
            line = f"stream_error: {self.code}"
        return line if self.resumed is None else f"{line} resumed={self.resumed}"

    def report(self, *, terminal: bool = False) -> list[str]:
        """What stderr gets: a warning when frames were skipped, the server's message when
        it gave one, and the status line, always last. For a terminal each line is the
        CLI's own style, and the server's words in it are escaped as model text is."""
        lines = []
        if self.skipped:
            frames = "1 frame" if self.skipped == 1 else f"{self.skipped} frames"
            lines.append(f"warning: {frames} of the model's output could not be read; the answer may have gaps")
        if self.message or self.retry_after:
            details = ", ".join(part for part in (
                f"request {self.request_id}" if self.request_id else "",
                f"retry after {self.retry_after} s" if self.retry_after else "",
            ) if part)
            lines.append(f"error: {self.message or self.code}" + (f" ({details})" if details else ""))
        lines.append(self.status_line)
        # One line each, whatever the server's message holds: a newline of its own would
        # start a line that looks like the CLI's (the status line is the last line).
        # Escaped also when stderr is a file: `cat` of a log would act on them all the same.
        lines = [visible(line.replace("\n", "\\n")) for line in lines]
        return [OWN_LINE.format(line) for line in lines] if terminal else lines

    @property
    def exit_code(self) -> int:
        codes = {"complete": EXIT_COMPLETE, "cut_short": EXIT_NOT_WHOLE, "unknown_ending": EXIT_NOT_WHOLE, "empty": EXIT_NOT_WHOLE,
                 "cancelled": EXIT_CANCELLED, "output_closed": EXIT_CANCELLED, "interrupted": EXIT_INTERRUPTED}
        return codes.get(self.kind, EXIT_STREAM_ERROR)


@dataclass(frozen=True, kw_only=True)
class Reading:
    """What one event gives: answer text, a complete tool call (the JSON object printed as
    {"tool_call": ...}), or the outcome a terminal event brings."""

    text: str = ""
    reasoning: str = ""  # shown apart on a terminal, never part of the answer
    tool_call: dict[str, Any] | None = None
    outcome: Outcome | None = None


NOTHING = Reading()
# What the server's words must look like to be shown on stderr (else they are left out):
# a model's name, an error code, a request id, a Retry-After (seconds or an HTTP date).
SHOWN_MODEL = re.compile(r"[@A-Za-z0-9._:/-]{1,128}")
SHOWN_CODE = re.compile(r"[a-z0-9_]{1,64}")
SHOWN_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
SHOWN_RETRY = re.compile(r"[A-Za-z0-9 ,:]{1,64}")


def shown(value: object, pattern: re.Pattern[str]) -> str | None:
    """`value` when it is a string that reads as `pattern` says, else None."""
    return value if isinstance(value, str) and pattern.fullmatch(value) else None


class AnswerReader:
    """Reads one answer's events; `take` returns what an event gives (text, a tool call, or
    the outcome). Subclasses know one wire format."""

    def __init__(self) -> None:
        self.chunks = 0
        self.chars = 0
        self.tool_calls = 0
        self.request_id: str | None = None
        self.stream_id: str | None = None  # a resumable answer's name, from `meta`
        self.model: str | None = None  # the model that answered, from `meta`, when it reads like a name
        self.tokens: tuple[int, int] | None = None  # from `done`'s usage
        self.last_event_id = ""  # of the last event taken: where a resumed answer goes on from
        self._text: list[str] = []  # the answer, for --history
        self._calls: list[dict[str, Any]] = []

    def take(self, event: Any) -> Reading:
        """`event`: an sse.Event."""
        self.last_event_id = event.id
        reading = self._interpret(event)
        if reading.text:
            self.chunks += 1
            self.chars += len(reading.text)  # code points, as the protocol's `chars`
            self._text.append(reading.text)
        if reading.tool_call is not None:
            self.tool_calls += 1
            call = reading.tool_call
            self._calls.append({"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}})
        return reading

    def answer(self) -> dict[str, Any]:
        """The answer so far as the assistant message a history holds."""
        text = "".join(self._text)
        if not self._calls:
            return {"role": "assistant", "content": text}
        return {"role": "assistant", "content": text or None, "tool_calls": list(self._calls)}

    def _interpret(self, event: Any) -> Reading:
        raise NotImplementedError

    def outcome(self, kind: str, **fields: Any) -> Outcome:
        fields.setdefault("request_id", self.request_id)
        if kind == "complete":
            fields["answer"] = self.answer()  # only a whole answer goes into --history
        return Outcome(kind=kind, chunks=self.chunks, chars=self.chars, tool_calls=self.tool_calls,
                       model=self.model, tokens=self.tokens, **fields)

    def ended(self, finish_reason: object, skipped: int) -> Outcome:
        """The outcome of an answer that ended with `done` ([DONE] with --raw), by its
        finish_reason (None or "" when the model did not say)."""
        reason = finish_reason if isinstance(finish_reason, str) or finish_reason is None else "other"
        if not reason or reason in WHOLE_ENDINGS:
            # Ended by the model, but with nothing in it (no text, no call): not an answer
            # anyone asked for, and as the page does, not shown as one.
            whole = self.chars or self.tool_calls
            if not whole:
                return self.outcome("empty", skipped=skipped)
            return self.outcome("complete", skipped=skipped, stopped_by=reason if reason and SHOWN_REASON.fullmatch(reason) else None)
        if reason in CUT_SHORT_ENDINGS:
            return self.outcome("cut_short", finish_reason=CUT_SHORT_ENDINGS[reason], skipped=skipped)
        if reason == FAILED_ENDING:
            return self.outcome("error", code="generation_failed")
        shown = reason if SHOWN_REASON.fullmatch(reason) else "other"
        return self.outcome("unknown_ending", finish_reason=shown, skipped=skipped)


class ProtocolReader(AnswerReader):
    """This project's protocol (docs/protocol.md): meta, delta, reasoning, tool calls, done,
    error. Of a tool call only its complete form (`tool_call`) is taken: the start and the
    argument fragments are for clients that show a call while it is written."""

    def _interpret(self, event: Any) -> Reading:
        try:
            data = json.loads(event.data)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
            raise MalformedStream("an event's data is not JSON") from None
        if not isinstance(data, dict):
            raise MalformedStream("an event's data is not an object")
        if event.type == "meta" and isinstance(data.get("request_id"), str):
            self.request_id = shown(data["request_id"], SHOWN_ID)
            if isinstance(data.get("stream_id"), str):
                self.stream_id = data["stream_id"]
            model = data.get("model")
            self.model = model if isinstance(model, str) and SHOWN_MODEL.fullmatch(model) else None
        elif event.type == "delta" and isinstance(data.get("text"), str):
            return Reading(text=data["text"])
        elif event.type == "reasoning" and isinstance(data.get("text"), str):
            return Reading(reasoning=data["text"])
        elif event.type == "tool_call":
            return Reading(tool_call=_tool_call(data))
        elif event.type == "done":
            skipped = data.get("skipped")
            counted = skipped if isinstance(skipped, int) and not isinstance(skipped, bool) and skipped > 0 else 0
            self.tokens = _tokens(data.get("usage"))
            return Reading(outcome=self.ended(data.get("finish_reason"), counted))
        elif event.type == "error":
            code = shown(data.get("code"), SHOWN_CODE) or "internal_error"
            message = data.get("message") if isinstance(data.get("message"), str) else None
            return Reading(outcome=self.outcome("error", code=code, message=message,
                                                request_id=shown(data.get("request_id"), SHOWN_ID) or self.request_id))
        return NOTHING  # unknown events are ignored (rule 3)


def _tokens(usage: object) -> tuple[int, int] | None:
    """(prompt, completion) tokens of a `done` event's usage; None when it has no counts."""
    if not isinstance(usage, dict):
        return None
    counts = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if all(isinstance(count, int) and not isinstance(count, bool) and 0 <= count < 2**53 for count in counts):
        return counts[0], counts[1]  # type: ignore[return-value]
    return None


def _tool_call(data: dict[str, Any]) -> dict[str, Any] | None:
    """The call a `tool_call` event carries, as printed; None when a field is missing or of
    the wrong type (the event is then skipped, as a delta without text is)."""
    if not all(isinstance(data.get(key), str) for key in ("call_id", "name", "arguments")):
        return None
    call = {"id": data["call_id"], "name": data["name"], "arguments": data["arguments"]}
    if isinstance(data.get("input"), dict) and "input_error" not in data:
        return {**call, "input": data["input"]}
    why = data.get("input_error")
    return {**call, "input": None, "input_error": why if isinstance(why, str) else "not a JSON object"}


class RawReader(AnswerReader):
    """/api/chat/raw: Workers AI's own frames, `data: {"response": ...}` and `data: [DONE]`
    (OpenAI-style `chat.completion.chunk` frames are read too, with their finish_reason).
    Without [DONE] the answer is not complete: raw frames have no error event, but an
    in-band error object (vLLM's `{"error": {...}}`, or `{"object": "error", ...}`) ends
    the answer as failed. A frame that is not a JSON object is counted as skipped."""

    def __init__(self) -> None:
        super().__init__()
        self._finish_reason: object = None  # the last one a frame gave
        self._skipped = 0

    def _interpret(self, event: Any) -> Reading:
        if event.data.strip() == "[DONE]":
            return Reading(outcome=self.ended(self._finish_reason, self._skipped))
        try:
            frame = json.loads(event.data)
        except (ValueError, RecursionError):
            frame = None
        if not isinstance(frame, dict):
            self._skipped += 1
            return NOTHING
        if frame.get("error") not in (None, False, "") or frame.get("object") == "error":
            return Reading(outcome=self.outcome("error", code="generation_failed"))  # its text is the provider's
        self.tokens = _tokens(frame.get("usage")) or self.tokens
        model = frame.get("model")
        if isinstance(model, str) and SHOWN_MODEL.fullmatch(model):
            self.model = model
        choices = frame.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        for finish_reason in (frame.get("finish_reason"), choice.get("finish_reason")):
            if finish_reason is not None and finish_reason != "":
                self._finish_reason = finish_reason
        response = frame.get("response")
        if isinstance(response, str):
            return Reading(text=response)
        if isinstance(response, int | float) and not isinstance(response, bool):
            return Reading(text=str(response))
        delta = choice.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
            return Reading(text=delta["content"])
        return NOTHING
