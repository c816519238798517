"""Upstream normalizer: one parsed upstream event in, the model output it carries out.

Understands Workers AI's native frames and OpenAI-style `chat.completion.chunk` frames.
Nothing an upstream sends makes it raise: a frame it cannot read is skipped and counted.
"""

from __future__ import annotations

import re
from typing import Any

from ._json import JSONNumber, loads_bounded, loads_exact
from ._jsonstr import scan_body, scanstring
from ._tool_calls import ToolCallAssembler, ToolCallError, ToolEvent
from ._workers_ai_errors import RATE_LIMIT_CODES, TIMEOUT_CODES, binding_error_code

__all__ = ["UpstreamNormalizer"]

_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
# A token count a JavaScript client can hold exactly; a larger one is not a real count.
_MAX_COUNT = 2**53 - 1
# finish_reason travels into logs and the `done` event, so it is never copied verbatim:
# the values providers document pass, their aliases are mapped, anything else is reported
# as "other". "error" is not among them: it is a failure (see _FAILED_FINISH_REASONS).
KNOWN_FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})
# Other providers' names for the same endings, as OpenAI-compatible servers pass them on
# (Anthropic: end_turn, max_tokens, stop_sequence; TGI: eos_token, stop_sequence; llama.cpp
# and others: eos). Sources in docs/upstream-shapes.md.
_FINISH_ALIASES = {
    "max_tokens": "length",
    "model_length": "length",  # Workers AI (cloudflare/ai's workers-ai-provider maps it so)
    "eos": "stop",
    "eos_token": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
}
# Finish reasons that say the generation failed: the answer ends with an `error`, never
# with `done`. "error": OpenRouter and others after a provider failed mid-stream (vLLM
# sends an error frame instead); "abort": vLLM's engine aborted the request.
_FAILED_FINISH_REASONS = frozenset({"error", "abort", "aborted", "cancelled", "canceled", "failed", "failure"})
# How much a finish reason says the answer is not whole: of several, the weightiest stands.
_FINISH_WEIGHT = {"other": 1, "length": 2, "content_filter": 2}
_RESPONSE_PREFIX = '{"response":"'
_PADDING_INFIX = ',"p":"'
_NOTHING = ("", "")


def fast_response(data: str) -> str | None:
    """The `response` text of a frame shaped exactly `{"response":"…"}` or
    `{"response":"…","p":"…"}` (compact, in that order), else None.

    This is nearly every frame of a Workers AI stream. Only the JSON strings are scanned
    (with the C scanner json.loads itself uses), and the rest of the frame is checked
    byte for byte, so the answer is what json.loads would give; any other shape returns
    None and takes the general path.
    """
    if not data.startswith(_RESPONSE_PREFIX):
        return None
    try:
        text, end = scanstring(data, 13)
        last = len(data) - 1
        if end == last:
            return text if data[end] == "}" else None
        if data.startswith(_PADDING_INFIX, end):
            end = scanstring(data, end + 6)[1]
            if end == last and data[end] == "}":
                return text
    except ValueError:
        # An unterminated string, a bad escape or a raw control character: leave the
        # verdict to the general path, which counts the frame as skipped.
        return None
    return None


# One whole native event as the stream carries it: `data: {"response":"…","p":"…"}` and
# its blank line. The response is any valid JSON string body, written as an "unrolled
# loop" so that runs of plain characters take the regex engine's fast single-class path;
# the padding must be plain characters (an escape in it sends the frame the general way).
_JSON_STRING_BODY = r'[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*'
# `(?!")`: a frame with empty text emits nothing, so it is left to the general path.
_NATIVE_PREFIX = 'data: {"response":"'
_NATIVE_EVENT = re.compile(
    r'data: \{"response":"(?!")(' + _JSON_STRING_BODY + r')"(?:,"p":"[^"\\\x00-\x1f]*")?\}\n\n'
)


def native_event_bodies(block: str) -> list[str] | None:
    """The response bodies (JSON string bodies, still escaped, never empty) of `block`
    when it is nothing but whole native events with text, each one `data:` line and a
    blank line, LF line ends; else None.

    This lets a run of common events be read with one regex call instead of line by
    line. Parsing such a block from between events dispatches exactly these events, and
    the general path reads each one's data as exactly this response text, so the
    result is the same as the general path's.
    """
    if not block.startswith(_NATIVE_PREFIX):
        # Spares other streams a regex search through every block.
        return None
    # With one group, split() alternates gap, body, gap, body, …, gap: the block is all
    # events exactly when every gap is empty.
    parts = _NATIVE_EVENT.split(block)
    if any(parts[::2]):
        return None
    return parts[1::2]


# One whole OpenAI-style content or reasoning chunk as Workers AI streams it for most
# current models (compact, in this key order, running usage on every chunk): nearly every
# event of such a stream. Only a frame that is valid JSON, with a usage the general path
# would keep, matches: the id and model are plain strings, the text any valid JSON string
# body, and the usage the three counts (in either order seen from Workers AI) with an
# optional cached_tokens, each of at most 15 digits, so below 2**53 ([0-9], not \d: JSON
# has no other digits). That usage replaces any earlier one, so its text is read by
# json.loads only when asked for. Any other shape (the role chunk, finish_reason, tool
# calls, escapes in the id, other usage) takes the general path.
_PLAIN = r'[^"\\\x00-\x1f]*'
_COUNT = r"(?:0|[1-9][0-9]{0,14})"
_USAGE = (
    r'\{"prompt_tokens":' + _COUNT + r',(?:"completion_tokens":' + _COUNT + r',"total_tokens":' + _COUNT
    + r'|"total_tokens":' + _COUNT + r',"completion_tokens":' + _COUNT + r')'
    + r'(?:,"prompt_tokens_details":\{"cached_tokens":' + _COUNT + r"\})?\}"
)
_OPENAI_PREFIX = '{"id":"'
# Up to the delta's field: the same in every chunk of one stream.
_OPENAI_HEAD = (
    r'\{"id":"' + _PLAIN + r'","object":"chat\.completion\.chunk","created":' + _COUNT + r',"model":"' + _PLAIN + r'",'
    r'"choices":\[\{"index":0,"delta":\{"'
)
_OPENAI_TAIL = (
    r'(content|reasoning_content|reasoning)":"(' + _JSON_STRING_BODY + r')"\},'
    r'"logprobs":null,"finish_reason":null\}\](?:,"usage":(null|' + _USAGE + r"))?\}"
)
_OPENAI_CHUNK = re.compile(_OPENAI_HEAD + _OPENAI_TAIL)


# The same chunk as a whole event of the stream: the commonest input of all, one network
# read holding one frame of the default model (chat.model.catalog).
_OPENAI_EVENT = re.compile("data: " + _OPENAI_CHUNK.pattern + "\n\n")
_OPENAI_EVENT_PREFIX = "data: " + _OPENAI_PREFIX
# A stream's chunks share their head (id, created, model), so once one has matched, the
# rest are matched against that head as a literal: the same verdict, about half the work
# of matching the id and model again in every chunk. Learned anew at most this often.
_HEADS_LEARNED = 3


def _learned_event(head: str) -> re.Pattern[str]:
    return re.compile(re.escape(head) + _OPENAI_TAIL + "\n\n")


def _is_count(value: object) -> bool:
    # bool is an int subclass, but `true` is not a token count.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_COUNT


def _cached_tokens(usage: dict[str, Any]) -> int | None:
    # Prompt caching reports the prompt tokens read from the prefix cache here, as
    # OpenAI does (the output schemas of Workers AI's model pages; chat/model/catalog.py). More
    # cached than prompt tokens is not a count of anything: left out.
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and _is_count(details.get("cached_tokens")):
        cached: int = details["cached_tokens"]
        return cached if cached <= usage["prompt_tokens"] else None
    return None


def _finish_reason(value: str) -> str:
    if value in KNOWN_FINISH_REASONS:
        return value
    return _FINISH_ALIASES.get(value, "other")


def _says_error(value: object) -> bool:
    return isinstance(value, str) and value.strip().lower() == "error"


def _failed(finish_reason: object) -> bool:
    return isinstance(finish_reason, str) and finish_reason.strip().lower() in _FAILED_FINISH_REASONS


def in_band_error(obj: dict[str, Any]) -> str | None:
    """The error code an upstream frame's in-band error ends the answer with, or None
    when the frame is no error.

    The shapes: `{"error": ...}` (vLLM's streaming error, OpenAI's own error body; only
    null, false or "" there mean "no error", as some servers send on every chunk), a bare
    error body `{"object": "error", ...}` or `{"type": "error", ...}` (Anthropic-style
    streams), and Cloudflare's API envelope `{"success": false, "errors": [...]}`. A
    Workers AI error code in it (a number, or the "<code>: ..." head of its message) that
    says "try later" or "too slow" picks that outcome; any other failure is
    `generation_failed`. The provider's message is never kept.
    """
    error = obj.get("error")
    if error is None or error is False or error == "":
        if _says_error(obj.get("object")) or _says_error(obj.get("type")):
            return failure_code(obj)
        if obj.get("success") is False and "errors" in obj:
            errors = obj["errors"]
            return failure_code(errors[0] if isinstance(errors, list) and errors else errors)
        return None
    return failure_code(error)


def failure_code(error: object) -> str:
    """Our code for a provider's error (see in_band_error): a Workers AI code in its
    `code`, or at the head of its message (the error itself, or its `message`), that says
    "try later" is `model_unavailable` and "too slow" `upstream_timeout`; anything else
    `generation_failed`."""
    message = error.get("message") if isinstance(error, dict) else error
    codes = (
        _error_code(error.get("code")) if isinstance(error, dict) else None,
        binding_error_code(message) if isinstance(message, str) else None,
    )
    if any(code in RATE_LIMIT_CODES for code in codes):
        return "model_unavailable"
    if any(code in TIMEOUT_CODES for code in codes):
        return "upstream_timeout"
    return "generation_failed"


def _error_code(value: object) -> int | None:
    # A code as a number (vLLM's HTTP status, Workers AI's 3040) or a string of digits.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 5:
        return int(value)
    return None


def _first_text(values: list[object]) -> tuple[str, bool]:
    """(text, readable) of the first of `values` with text. Another with a text of its
    own (not the same again, as servers that fill two fields send) makes the frame
    unreadable: it cannot be told which one is the model's, and neither is dropped in
    silence."""
    texts = [text_of(value) for value in values]
    readable = all(ok for _, ok in texts)
    found = [text for text, _ in texts if text]
    if not found:
        return "", readable
    return found[0], readable and all(text == found[0] for text in found)


def text_of(value: object) -> tuple[str, bool]:
    """(text, readable) of one text field's value; the one rule every text field follows.

    A string is its text; a number is its lexeme exactly as sent (`0.005`, `1.10`,
    `1e400`: some OpenAI-compatible streams send a numeric token as a JSON number); null
    is no text (normal on tool-call chunks); an array of content parts is the text of its
    `text` parts joined. Anything else (a boolean, an object, a part that is not text)
    cannot be read as text: readable is False, and the frame counts as skipped, so the
    answer says it has a gap instead of dropping the value in silence.
    """
    if isinstance(value, list):
        parts = [_part_text(part) for part in value]
        return "".join(text for text, _ in parts), all(readable for _, readable in parts)
    return _scalar_text(value)


def _scalar_text(value: object) -> tuple[str, bool]:
    if isinstance(value, str):
        return value, True
    if value is None:
        return "", True
    if isinstance(value, JSONNumber):
        return value.lexeme, True
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), True
    return "", False


def _part_text(part: object) -> tuple[str, bool]:
    # A content part `{"type": "text", "text": ...}`; its text follows the scalar rule.
    if isinstance(part, dict) and part.get("type") == "text" and "text" in part:
        return _scalar_text(part["text"])
    return "", False


class UpstreamNormalizer:
    """Reads upstream events into their text and reasoning text, and records the rest.

    Workers AI native frames: `response` (a string, or a number emitted as its `str`),
    `p` (their padding, dropped), `usage`, `tool_calls`, and an optional top-level
    `finish_reason`. OpenAI-style frames: `choices[0].delta.content`,
    `choices[0].delta.reasoning_content` (or `reasoning`), `choices[0].delta.tool_calls`,
    `choices[0].finish_reason`,
    `usage` (with `prompt_tokens_details.cached_tokens`, kept as `cached_tokens`), and
    the final `choices: []` chunk. `[DONE]` (with or without the space after `data:`, and
    with surrounding whitespace) is recognised before any JSON parsing; every event after
    it is ignored. A frame that is not JSON (NaN and Infinity are not), nests deeper than
    MAX_JSON_DEPTH, is not an object, has no field this class knows, or has an event type
    other than "message" is counted in `skipped`. A `response` number that is not finite
    is skipped too; a `finish_reason` outside KNOWN_FINISH_REASONS is recorded as
    "other"; usage counts must be integers from 0 to 2**53 - 1.

    Tool calls are assembled by a ToolCallAssembler: the events they give are appended to
    `tool_events`, for the caller to take after each read (the first `before_text` of them
    before the text it returned, the rest after); tool calls it cannot pass on set
    `failure` to the error code the stream must end with, and nothing is read after that.
    """

    def __init__(self, call_id_prefix: str = "call", framing: str | None = None) -> None:
        """`framing`: "native" or "openai", the frames the catalog says the model streams
        (chat.model.catalog), whose fast path is tried first; None for a model it does
        not know. It only orders the fast paths: a frame of either shape, or any other,
        reads the same whatever it says."""
        self._native_first = framing == "native"
        self.done = False
        self.finish_reason: str | None = None
        self._finishes = 0  # finish reasons read, to tell a frame that brought one
        self._usage: dict[str, int] | None = None
        # The usage text of the last chunk read by the fast path, read only when asked for:
        # a stream repeats its running usage in every chunk, and only the last one counts.
        self._usage_text: str | None = None
        self.skipped = 0
        self._learned_event: re.Pattern[str] | None = None  # this stream's chunk, its head known
        self._heads_left = _HEADS_LEARNED
        self._tools = ToolCallAssembler(call_id_prefix)
        self.tool_events: list[ToolEvent] = []
        # How many of tool_events came before the text `read` returned with them: a call the
        # text ended is whole before the text begins. The rest came after it.
        self.before_text = 0
        self.failure: str | None = None

    @property
    def tool_calls(self) -> int:
        """Tool calls the model started so far."""
        return self._tools.count

    @property
    def call_open(self) -> bool:
        """Whether a tool call is being written: text that comes next ends it, so the text
        must be read here (never copied past by a caller's fast path)."""
        return self._tools.open

    @property
    def tool_fragments(self) -> int:
        """Tool-call entries that carried output (a call's start, a piece of arguments)."""
        return self._tools.fragments

    def _finished(self, reason: str) -> None:
        # A repeated finish never makes a cut answer whole: "length" then "stop" is a cut
        # answer, whatever came last.
        reason = _finish_reason(reason)
        if _FINISH_WEIGHT.get(reason, 0) >= _FINISH_WEIGHT.get(self.finish_reason or "", 0):
            self.finish_reason = reason
        self._finishes += 1

    def _end_call_before_text(self) -> None:
        self._tools.finish(self.tool_events)
        self.before_text = len(self.tool_events)

    def complete_tool_calls(self) -> None:
        """Completes a call still open when the stream ends (its `ToolCall` event)."""
        self._tools.finish(self.tool_events)

    @property
    def usage(self) -> dict[str, int] | None:
        """The last valid usage the upstream reported (counts, and `cached_tokens`)."""
        self._read_pending_usage()
        return self._usage

    def _read_pending_usage(self) -> None:
        if self._usage_text is not None:
            text, self._usage_text = self._usage_text, None
            self._record_usage(loads_bounded(text))

    def _record_usage(self, usage: object) -> bool:
        """Keeps `usage` when its counts are valid; True when the frame's usage was
        readable (null included), as the general path counts a known field."""
        if usage is None:
            return True
        if isinstance(usage, dict) and all(_is_count(usage.get(k)) for k in _USAGE_KEYS):
            self._usage = {k: usage[k] for k in _USAGE_KEYS}
            cached = _cached_tokens(usage)
            if cached is not None:
                self._usage["cached_tokens"] = cached
            return True
        return False

    def read(self, event_type: str, data: str) -> tuple[str, str]:
        """(text, reasoning text) of one upstream event, "" for what it does not carry.

        The one place the per-event rules live: the Reframer reads every event through
        it. Never raises.
        """
        if self.done or self.failure is not None:
            return _NOTHING
        if event_type != "message":
            if _says_error(event_type):
                # An SSE event named "error" (Anthropic-style streams, some proxies): the
                # upstream says the generation failed, whatever its data holds.
                self.failure = "generation_failed"
            else:
                self.skipped += 1
            return _NOTHING
        text = fast_response(data)
        if text is not None:
            if self._tools.open:
                self._end_call_before_text()
            return text, ""
        if data.startswith(_OPENAI_PREFIX):
            chunk = _OPENAI_CHUNK.fullmatch(data)
            if chunk is not None:
                field, body, usage = chunk.groups()
                if usage is not None and usage != "null":
                    self._usage_text = usage
                text = scan_body(body) if "\\" in body else body
                if self._tools.open:
                    self._end_call_before_text()
                return ("", text) if field != "content" else (text, "")
        return self.frame(data)

    def whole_event(self, text: str) -> tuple[bool, str] | None:
        """(is reasoning, JSON string body of its text) when `text`, read from between two
        events, is exactly one event of model text in the commonest frame shapes (a
        native `{"response":…}` frame, or the OpenAI-style chunk the fast path of `read`
        takes) with nothing else; else None, and nothing was read.

        Reading such an event here gives what the general path gives for it: the same
        text, and the same usage kept. The caller copies the body through undecoded.
        """
        if self._tools.open or self.done or self.failure is not None:
            return None  # text after a call ends the call: the general path does that
        if self._native_first and text.startswith(_NATIVE_PREFIX):
            native = _NATIVE_EVENT.fullmatch(text)
            return None if native is None else (False, native.group(1))
        if text.startswith(_OPENAI_EVENT_PREFIX):
            learned = self._learned_event
            chunk = learned.fullmatch(text) if learned is not None else None
            if chunk is None:
                chunk = _OPENAI_EVENT.fullmatch(text)
                if chunk is None:
                    return None
                if self._heads_left:
                    self._heads_left -= 1
                    self._learned_event = _learned_event(text[: chunk.start(1)])
            field, body, usage = chunk.groups()
            if not body:
                return None  # an empty text sends nothing; the general path says so
            if usage is not None and usage != "null":
                self._usage_text = usage
            return field != "content", body
        if text.startswith(_NATIVE_PREFIX):
            native = _NATIVE_EVENT.fullmatch(text)
            if native is not None:
                return False, native.group(1)
        return None

    def frame(self, data: str) -> tuple[str, str]:
        """The general path for one `message` event's data: (text, reasoning text).

        Records `[DONE]`, finish_reason, usage, tool calls and failures as side effects.
        """
        if data.strip() == "[DONE]":
            self.done = True
            return _NOTHING
        try:
            # Bounded: a deeply nested frame would otherwise overflow Pyodide's stack,
            # which aborts the whole isolate. Too deep, NaN/Infinity, not JSON: skipped.
            # Numbers keep their lexemes: a number may be text.
            obj = loads_exact(data)
        except ValueError:
            self.skipped += 1
            return _NOTHING
        if not isinstance(obj, dict):
            self.skipped += 1
            return _NOTHING
        finishes = self._finishes
        try:
            text, reasoning, known, readable = self._fields(obj)
            if self._finishes != finishes:
                # The model gave its finish reason: the call it was writing is complete.
                self._tools.finish(self.tool_events)
        except ToolCallError as error:
            self.failure = error.code
            return _NOTHING
        if self.failure is not None:
            # The upstream said the generation failed: the text of this frame is the last
            # of the partial answer.
            return text, reasoning
        if not known or not readable:
            self.skipped += 1
        return text, reasoning

    def _fields(self, obj: dict[str, Any]) -> tuple[str, str, bool, bool]:
        """(text, reasoning, known, readable): `known` when the frame had a field this
        class reads, `readable` unless a text field held something that is not text."""
        self._fail(in_band_error(obj))
        text = ""
        reasoning = ""
        known = False
        readable = True
        if "response" in obj:
            text, readable = text_of(obj["response"])
            known = True
        if "usage" in obj:
            # A usage deferred by the fast path came first; this one replaces it if valid.
            self._read_pending_usage()
            # OpenAI sends `"usage": null` on every chunk but the last when usage is on.
            if self._record_usage(obj["usage"]):
                known = True
        if "tool_calls" in obj and self._tools.read(obj["tool_calls"], self.tool_events):
            known = True
        # A native frame's own finish_reason; null or "" there is no news.
        if obj.get("finish_reason") not in (None, "") and self._finish(obj):
            known = True
        choices = obj.get("choices")
        if isinstance(choices, list):
            self._fail_on_choice_errors(choices)
            if not choices:
                # The final OpenAI chunk: `"choices": []` next to the usage.
                known = True
            elif isinstance(choices[0], dict):
                choice_text, reasoning, choice_known, choice_readable = self._choice(choices[0])
                if text and choice_text and choice_text != text:
                    readable = False  # a `response` and a choice's text: which is the model's?
                text = text or choice_text
                known = known or choice_known
                readable = readable and choice_readable
        return text, reasoning, known, readable

    def _fail(self, code: str | None) -> None:
        # The first failure a frame names is the answer's.
        if code is not None and self.failure is None:
            self.failure = code

    def _fail_on_choice_errors(self, choices: list[Any]) -> None:
        # vLLM ends every choice when one fails: an error in any choice, or in its delta,
        # or a failed finish reason there, fails the answer.
        # A choice is no error body: only its `error` (or its delta's) is one.
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if "error" in choice:
                self._fail(in_band_error({"error": choice["error"]}))
            if isinstance(delta, dict) and "error" in delta:
                self._fail(in_band_error({"error": delta["error"]}))
            if _failed(choice.get("finish_reason")):
                self._fail("generation_failed")

    def _finish(self, holder: dict[str, Any]) -> bool:
        """Reads `holder`'s finish_reason; True when it has the field. A reason that says
        the generation failed, or is not text, fails the answer."""
        if "finish_reason" not in holder:
            return False
        finish_reason = holder["finish_reason"]
        if isinstance(finish_reason, str) and finish_reason:
            if _failed(finish_reason):
                self._fail("generation_failed")
            else:
                self._finished(finish_reason)
            return True
        if finish_reason is None or finish_reason == "":
            return True  # some servers send "" on every chunk for "not yet"; null is OpenAI's
        # A finish reason that is not text (an object, a number): how the generation ended
        # cannot be told, so the answer cannot be called complete.
        self._fail("upstream_malformed")
        return True

    def _choice(self, choice: dict[str, Any]) -> tuple[str, str, bool, bool]:
        # Text in the choice's first text field present: OpenAI's streamed `delta.content`,
        # `delta.text` and the completions API's `text` (some servers stream those), or a
        # whole `message.content`.
        known = self._finish(choice)
        delta = choice.get("delta")
        message = choice.get("message")
        holder = delta if isinstance(delta, dict) else message if isinstance(message, dict) else None
        sources = ((delta, "content"), (delta, "text"), (choice, "text"), (message, "content"))
        present = [source[field] for source, field in sources if isinstance(source, dict) and source.get(field) is not None]
        known = known or bool(present)
        if len(present) == 1 and type(present[0]) is str:
            text, readable = present[0], True  # nearly every chunk: one string of text
        else:
            text, readable = _first_text(present)
        reasoning = ""
        if holder is not None:
            known = True
            # vLLM-served models name it `reasoning_content`; Kimi K2.6 and later name it
            # `reasoning` (Workers AI changelog, 2026-04-20). Read the one that is not empty.
            both = holder.get("reasoning_content"), holder.get("reasoning")
            if both != (None, None):
                reasoning, reasoning_readable = _first_text(list(both))
                readable = readable and reasoning_readable
            if (text or reasoning) and self._tools.open:
                # Text after a call: the call is done, and a client may run it now.
                self._end_call_before_text()
            if "tool_calls" in holder:
                self._tools.read(holder["tool_calls"], self.tool_events)
        return text, reasoning, known, readable
