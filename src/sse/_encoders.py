"""Writers for this project's stream protocol (docs/protocol.md).

Encoders return `str`; the Reframer joins everything one input chunk produced and encodes
it to bytes once, so that one chunk in is one piece of bytes out.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from json.encoder import encode_basestring
from types import MappingProxyType

from ._events import Part, PartEnding, ReframerStats, ToolCall, ToolCallDelta
from ._jsonstr import scan_body

__all__ = [
    "Encoder",
    "NDJSONEncoder",
    "SSEEncoder",
    "STREAM_HEADERS",
]

# Every layer between the model and the reader must pass chunks on as they come: no cache,
# no transformation, no proxy buffering (nginx honours x-accel-buffering), no compression
# (a compressor holds bytes back until its block fills).
STREAM_HEADERS: Mapping[str, str] = MappingProxyType(
    {
        "cache-control": "no-cache, no-store, no-transform",
        "x-accel-buffering": "no",
        "content-encoding": "identity",
    }
)


def _dumps(value: object) -> str:
    # Compact, and UTF-8 text left as it is: \uXXXX escapes would triple the bytes of
    # every non-Latin token. Any raw CR/LF is escaped by JSON, so the result is one line.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _meta_payload(request_id: str, model: str, stream_id: str | None, gateway_log_id: str | None) -> dict[str, str]:
    payload = {"request_id": request_id, "model": model}
    if stream_id is not None:
        payload["stream_id"] = stream_id
    if gateway_log_id is not None:
        payload["gateway_log_id"] = gateway_log_id
    return payload


def _done_payload(stats: ReframerStats) -> dict[str, object]:
    # "chunks" on the wire: the protocol's name for the number of delta events.
    payload: dict[str, object] = {
        "finish_reason": stats.finish_reason,
        "usage": stats.usage,
        "chunks": stats.deltas,
        "chars": stats.chars,
        "skipped": stats.skipped,
    }
    if stats.tool_calls:
        payload["tool_calls"] = stats.tool_calls  # only in answers that called tools
    return payload


def _tool_call_payload(call: ToolCall) -> dict[str, object]:
    # `call_id`, not `id`: NDJSON readers of a resumable answer get the event's id in `id`.
    payload: dict[str, object] = {"index": call.index, "call_id": call.id, "name": call.name, "arguments": call.arguments,
                                  "input": call.input}
    if call.input_error is not None:
        payload["input_error"] = call.input_error
    return payload


class Encoder(ABC):
    """One encoding of the protocol: a method for each event of the vocabulary in
    sse._events, each returning the text of its frames ("" for none).

    A new encoding implements the abstract methods and `content_type`; the Reframer
    needs nothing else. The Reframer decides where parts start and end (sse._parts) and
    calls `part_start` and `part_end` for each; between them, `delta`, `reasoning` and
    the tool-call methods carry the open part's content. `headers` are the response's
    headers for this encoding. An encoder may keep state (the ids it gave, an answer it
    repeats at its end), so give every Reframer its own instance. `padding` is made only
    of ASCII letters and digits, so an encoder may embed it in JSON without escaping.
    """

    content_type: str

    @property
    def full(self) -> bool:
        """True once the encoder holds all of the answer it may (one that repeats the whole
        answer at its end keeps it): the Reframer then ends the stream with
        `upstream_malformed`, as for an event over its cap."""
        return False

    @property
    def headers(self) -> dict[str, str]:
        """The response headers a stream in this encoding is sent with."""
        return {"content-type": self.content_type, **STREAM_HEADERS}

    @abstractmethod
    def meta(self, *, request_id: str, model: str, stream_id: str | None = None, gateway_log_id: str | None = None) -> str:
        """The first frame; `stream_id` names a resumable answer (None: not resumable),
        `gateway_log_id` the AI Gateway's log entry of the model call (None: no gateway)."""

    @abstractmethod
    def part_start(self, part: Part, padding: str) -> str:
        """A part begins; a tool call's (`part.call`: its id and name) with `padding`,
        text and reasoning parts with none."""

    def part_end(self, part: Part, ending: PartEnding) -> str:
        """A part ended, and how (PartEnding). Most encodings have no frame for it."""
        return ""

    @abstractmethod
    def delta(self, text: str, padding: str) -> str:
        """Text of the open text part."""

    @abstractmethod
    def reasoning(self, text: str, padding: str) -> str:
        """Text of the open reasoning part."""

    @abstractmethod
    def tool_call_delta(self, delta: ToolCallDelta, padding: str) -> str:
        """A piece of a call's arguments."""

    @abstractmethod
    def tool_call(self, call: ToolCall) -> str:
        """A call is complete: its whole arguments, parsed where they can be."""

    def carries(self, call: ToolCall) -> bool:
        """Whether this encoding can hand the client `call` as the model wrote it; one it
        cannot ends the answer with `upstream_malformed` before the call's `tool_call`."""
        return True

    @abstractmethod
    def ping(self) -> str: ...

    @abstractmethod
    def done(self, stats: ReframerStats) -> str:
        """The terminal frame of a complete answer; `stats` says what was streamed."""

    @abstractmethod
    def error(self, *, code: str, message: str, request_id: str) -> str: ...

    def json_delta(self, body: str, padding: str) -> str:
        """The `delta` frame for a text given as the body of a JSON string literal (valid
        JSON escapes, no quotes): the same as `delta` with the decoded text. An encoder
        whose frames are JSON overrides it to copy the body through undecoded."""
        return self.delta(scan_body(body), padding)

    def json_reasoning(self, body: str, padding: str) -> str:
        """`json_delta` for a `reasoning` frame."""
        return self.reasoning(scan_body(body), padding)

    def json_deltas(self, bodies: Sequence[str], paddings: Iterable[str]) -> str:
        """The `delta` frames for several texts, each given as the body of a JSON string
        literal: valid JSON escapes, no surrounding quotes. Takes exactly one padding
        per body from `paddings` (zip with `bodies` first stops before taking more).

        The same as calling `delta` with each decoded text; an encoder whose frames are
        JSON overrides it to copy the bodies through without decoding them.
        """
        delta = self.delta
        return "".join(
            [delta(scan_body(body), pad) for body, pad in zip(bodies, paddings, strict=False)]
        )


class SSEEncoder(Encoder):
    """The default encoding: `text/event-stream`, one named event per frame."""

    content_type = "text/event-stream; charset=utf-8"

    def meta(self, *, request_id: str, model: str, stream_id: str | None = None, gateway_log_id: str | None = None) -> str:
        return f"event: meta\ndata: {_dumps(_meta_payload(request_id, model, stream_id, gateway_log_id))}\n\n"

    def delta(self, text: str, padding: str) -> str:
        # Built by hand rather than with json.dumps: this runs once per token, and
        # encode_basestring is the same C routine json.dumps uses for a str.
        return f'event: delta\ndata: {{"text":{encode_basestring(text)},"p":"{padding}"}}\n\n'

    def json_deltas(self, bodies: Sequence[str], paddings: Iterable[str]) -> str:
        # A valid JSON string body is already a valid JSON string body of ours.
        return "".join(
            [
                f'event: delta\ndata: {{"text":"{body}","p":"{pad}"}}\n\n'
                for body, pad in zip(bodies, paddings, strict=False)
            ]
        )

    def json_delta(self, body: str, padding: str) -> str:
        return f'event: delta\ndata: {{"text":"{body}","p":"{padding}"}}\n\n'

    def reasoning(self, text: str, padding: str) -> str:
        return f'event: reasoning\ndata: {{"text":{encode_basestring(text)},"p":"{padding}"}}\n\n'

    def json_reasoning(self, body: str, padding: str) -> str:
        return f'event: reasoning\ndata: {{"text":"{body}","p":"{padding}"}}\n\n'

    def part_start(self, part: Part, padding: str) -> str:
        call = part.call
        if call is None:
            return ""
        return (f'event: tool_call_start\ndata: {{"index":{call.index},"call_id":{encode_basestring(call.id)},'
                f'"name":{encode_basestring(call.name)},"p":"{padding}"}}\n\n')

    def tool_call_delta(self, delta: ToolCallDelta, padding: str) -> str:
        return (f'event: tool_call_delta\ndata: {{"index":{delta.index},"arguments":{encode_basestring(delta.arguments)},'
                f'"p":"{padding}"}}\n\n')

    def tool_call(self, call: ToolCall) -> str:
        return f"event: tool_call\ndata: {_dumps(_tool_call_payload(call))}\n\n"

    def ping(self) -> str:
        return ": ping\n\n"

    def done(self, stats: ReframerStats) -> str:
        payload = _done_payload(stats)
        return f"event: done\ndata: {_dumps(payload)}\n\n"

    def error(self, *, code: str, message: str, request_id: str) -> str:
        payload = {"code": code, "message": message, "request_id": request_id}
        return f"event: error\ndata: {_dumps(payload)}\n\n"


class NDJSONEncoder(Encoder):
    """`application/x-ndjson`: one JSON object a line, its kind in `type`."""

    content_type = "application/x-ndjson"

    def meta(self, *, request_id: str, model: str, stream_id: str | None = None, gateway_log_id: str | None = None) -> str:
        return _dumps({"type": "meta", **_meta_payload(request_id, model, stream_id, gateway_log_id)}) + "\n"

    def delta(self, text: str, padding: str) -> str:
        return f'{{"type":"delta","text":{encode_basestring(text)},"p":"{padding}"}}\n'

    def json_deltas(self, bodies: Sequence[str], paddings: Iterable[str]) -> str:
        return "".join(
            [
                f'{{"type":"delta","text":"{body}","p":"{pad}"}}\n'
                for body, pad in zip(bodies, paddings, strict=False)
            ]
        )

    def json_delta(self, body: str, padding: str) -> str:
        return f'{{"type":"delta","text":"{body}","p":"{padding}"}}\n'

    def reasoning(self, text: str, padding: str) -> str:
        return f'{{"type":"reasoning","text":{encode_basestring(text)},"p":"{padding}"}}\n'

    def json_reasoning(self, body: str, padding: str) -> str:
        return f'{{"type":"reasoning","text":"{body}","p":"{padding}"}}\n'

    def part_start(self, part: Part, padding: str) -> str:
        call = part.call
        if call is None:
            return ""
        return (f'{{"type":"tool_call_start","index":{call.index},"call_id":{encode_basestring(call.id)},'
                f'"name":{encode_basestring(call.name)},"p":"{padding}"}}\n')

    def tool_call_delta(self, delta: ToolCallDelta, padding: str) -> str:
        return f'{{"type":"tool_call_delta","index":{delta.index},"arguments":{encode_basestring(delta.arguments)},"p":"{padding}"}}\n'

    def tool_call(self, call: ToolCall) -> str:
        return _dumps({"type": "tool_call", **_tool_call_payload(call)}) + "\n"

    def ping(self) -> str:
        return '{"type":"ping"}\n'

    def done(self, stats: ReframerStats) -> str:
        payload = {"type": "done", **_done_payload(stats)}
        return _dumps(payload) + "\n"

    def error(self, *, code: str, message: str, request_id: str) -> str:
        payload = {"type": "error", "code": code, "message": message, "request_id": request_id}
        return _dumps(payload) + "\n"
