"""Anthropic's Messages API as one more encoding of the protocol (docs/anthropic.md): the
streamed events of `POST /v1/messages`, or, collected, the one Message object of a
request without `stream`.

The events as Anthropic's streaming page describes them (platform.claude.com/docs/en/
build-with-claude/streaming, read 2026-12-04). A stream is `message_start`, then each content block in the model's order (a part of the
answer, sse._events.Part: its `index` is the part's number), opened by
`content_block_start`, written by `content_block_delta` (`text_delta`, `thinking_delta`,
`input_json_delta`) and closed by `content_block_stop` (a call's once its input is
whole), then `message_delta` with the
stop reason and the usage, then `message_stop`. A failure after the start is one `error`
event (`overloaded_error` when the model is busy or rate-limited, `api_error` otherwise)
and nothing after it: the SDKs raise on it, and an answer with no `message_stop` is never
read as complete. The block being written when the answer fails is not closed.

The open models' reasoning streams as `thinking` blocks when the client asked for thinking
it can see (`thinking` enabled or adaptive, its `display` not "omitted"), and is left out
otherwise: a block's `index` counts the blocks sent, so it is not the part's number.
Anthropic signs each thinking block so that it can be sent back unchanged; these are not
Anthropic's, so their `signature` is empty, and a client that sends them back has them
left out of the model's input (chat.api.anthropic).
"""

from __future__ import annotations

from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

from ._codes import ERROR_CODES
from ._encoders import Encoder, _dumps
from ._events import Part, PartEnding, PartKind, ReframerStats, ToolCall, ToolCallDelta

__all__ = ["AnthropicEncoder", "anthropic_error", "anthropic_error_type", "anthropic_usage"]

JSON_TYPE = "application/json"

# The error `type` for a status, as Anthropic's errors page names them (docs.claude.com/en/api/errors,
# read 2026-12-04: invalid_request_error for any 4XX it lists no other type for, api_error
# for its own failures, overloaded_error for 529); the SDKs pick their exception class by
# the HTTP status.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
    503: "overloaded_error",
}

# The model's finish reasons (sse.KNOWN_FINISH_REASONS) as stop reasons.
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use",
                 "content_filter": "refusal"}


# Codes whose type is not their status's: a model without capacity is Anthropic's
# `overloaded_error`, which Claude Code and the SDKs retry as such.
_CODE_TYPES = {"model_unavailable": "overloaded_error"}


def anthropic_error_type(code: str) -> str:
    """The Anthropic error type of one of our codes."""
    if code in _CODE_TYPES:
        return _CODE_TYPES[code]
    entry = ERROR_CODES.get(code)
    return _ERROR_TYPES.get(entry.status if entry is not None else 500, "api_error")


def anthropic_error(code: str, message: str) -> dict[str, Any]:
    """The `{"type": "error", "error": {...}}` body of one of our codes."""
    return {"type": "error", "error": {"type": anthropic_error_type(code), "message": message}}


def anthropic_usage(usage: Mapping[str, int] | None) -> dict[str, int]:
    """Our counts as Anthropic's: its input_tokens leave out the tokens read from the
    prompt cache, which it counts in cache_read_input_tokens."""
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    cached = usage.get("cached_tokens", 0)
    return {"input_tokens": usage["prompt_tokens"] - cached, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached, "output_tokens": usage["completion_tokens"]}


class AnthropicEncoder(Encoder):
    """`streamed`: server-sent events; else nothing until the end, which is the Message
    object (or the error body, the caller setting the status from the error code). The
    message names the Workers AI model that answered, whatever name the client asked for.
    `thinking`: send the reasoning as thinking blocks."""

    def __init__(self, *, streamed: bool = True, thinking: bool = False) -> None:
        self.content_type = "text/event-stream; charset=utf-8" if streamed else JSON_TYPE
        self._streamed = streamed
        self._model = ""
        self._thinking = thinking
        self._id = ""
        self._blocks_of: dict[int, int] = {}  # a part's number -> its block's index, for the parts sent
        self._open = -1  # the index of the text or thinking block being written; -1: none sent
        self._call_blocks: dict[int, int] = {}  # a call's index -> its block's index
        self._blocks: list[dict[str, Any]] = []  # a collected answer's content
        self._texts: list[list[str]] = []  # each block's pieces of text

    @property
    def headers(self) -> dict[str, str]:
        return super().headers if self._streamed else {"content-type": JSON_TYPE}

    def meta(self, *, request_id: str, model: str, stream_id: str | None = None, gateway_log_id: str | None = None) -> str:
        self._id = "msg_" + request_id
        self._model = model
        if not self._streamed:
            return ""
        message: dict[str, Any] = {"id": self._id, "type": "message", "role": "assistant", "model": self._model, "content": [],
                   "stop_reason": None, "stop_sequence": None, "usage": anthropic_usage(None)}
        return _event("message_start", {"message": message}) + self.ping()

    def part_start(self, part: Part, padding: str) -> str:
        call = part.call
        if part.kind is PartKind.TEXT:
            block: dict[str, Any] = {"type": "text", "text": ""}
        elif part.kind is PartKind.REASONING:
            if not self._thinking:
                self._open = -1
                return ""
            block = {"type": "thinking", "thinking": "", "signature": ""}
        else:
            assert call is not None
            block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        index = self._blocks_of[part.number] = len(self._blocks_of)
        if call is None:
            self._open = index
        else:
            self._call_blocks[call.index] = index
        self._blocks.append(block)
        self._texts.append([])
        if not self._streamed:
            return ""
        return _event("content_block_start", {"index": index, "content_block": block})

    def part_end(self, part: Part, ending: PartEnding) -> str:
        # A block cut at the budget is closed (the stop reason says max_tokens); one the
        # answer failed in is not. A call's block closed when its input was whole.
        index = self._blocks_of.get(part.number)
        if index is None or not self._streamed or ending is PartEnding.FAILED or part.kind is PartKind.TOOL_CALL:
            return ""
        return _event("content_block_stop", {"index": index})

    def delta(self, text: str, padding: str) -> str:
        return self._delta(self._open, "text_delta", "text", text, padding)

    def reasoning(self, text: str, padding: str) -> str:
        if self._open < 0:
            return ""  # thinking the client does not see
        return self._delta(self._open, "thinking_delta", "thinking", text, padding)

    def tool_call_delta(self, delta: ToolCallDelta, padding: str) -> str:
        if not self._streamed:
            return ""  # the whole input comes with tool_call
        return self._delta(self._call_blocks[delta.index], "input_json_delta", "partial_json", delta.arguments, padding)

    def carries(self, call: ToolCall) -> bool:
        # A tool_use block's input is a JSON object; arguments that are none (cut JSON, a
        # list) would be run as {} or fail in the SDK's parse after message_stop.
        return call.input is not None

    def tool_call(self, call: ToolCall) -> str:
        # Its block closes now, not when the core ends its part: Anthropic's blocks come one
        # at a time, and the next call may start before text ends the calls' parts (the
        # core keeps calls open that long for the Responses API). Every call is whole
        # before an answer ends well, and a client runs none before message_stop.
        index = self._call_blocks[call.index]
        self._blocks[index]["input"] = call.input
        return _event("content_block_stop", {"index": index}) if self._streamed else ""

    def ping(self) -> str:
        return _event("ping", {}) if self._streamed else ""

    def done(self, stats: ReframerStats) -> str:
        reason = _STOP_REASONS.get(stats.finish_reason or "stop", "end_turn")
        stop_sequence = stats.stop_sequence
        if stop_sequence is not None and reason == "end_turn":
            reason = "stop_sequence"
        usage = anthropic_usage(stats.usage)
        if not self._streamed:
            return _dumps({"id": self._id, "type": "message", "role": "assistant", "model": self._model,
                           "content": self._content(), "stop_reason": reason, "stop_sequence": stop_sequence, "usage": usage})
        delta = {"delta": {"stop_reason": reason, "stop_sequence": stop_sequence}, "usage": usage}
        return _event("message_delta", delta) + _event("message_stop", {})

    def error(self, *, code: str, message: str, request_id: str) -> str:
        # Our code travels in the message, with the request id for support.
        failure = anthropic_error(code, f"{message} ({code}, request {request_id})")
        if not self._streamed:
            self._blocks, self._texts = [], []
            return _dumps(failure)
        return _event("error", {"error": failure["error"]})

    # ------------------------------------------------------------------------------------

    def _delta(self, index: int, kind: str, field: str, text: str, padding: str) -> str:
        if not self._streamed:
            self._texts[index].append(text)
            return ""
        # `p` rides along as an extra key (the SDKs keep unknown keys), so frame sizes keep
        # hiding token lengths here too.
        pad = f',"p":"{padding}"' if padding else ""
        return (f'event: content_block_delta\ndata: {{"type":"content_block_delta","index":{index},'
                f'"delta":{{"type":"{kind}","{field}":{encode_basestring(text)}}}{pad}}}\n\n')

    def _content(self) -> list[dict[str, Any]]:
        for block, texts in zip(self._blocks, self._texts, strict=True):
            if block["type"] == "text":
                block["text"] = "".join(texts)
            elif block["type"] == "thinking":
                block["thinking"] = "".join(texts)
        return self._blocks


def _event(kind: str, fields: Mapping[str, Any]) -> str:
    return f"event: {kind}\ndata: {_dumps({'type': kind, **fields})}\n\n"
