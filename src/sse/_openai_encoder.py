"""OpenAI's Chat Completions as two more encodings of the protocol: the streamed
`chat.completion.chunk` events, and the one `chat.completion` object of a non-streamed
answer, collected through the same Reframer.

A stream starts with a chunk holding the assistant role, then one chunk per delta, then
one with `finish_reason`, then (with `stream_options.include_usage`) one with empty
`choices` and the usage, then `data: [DONE]`. A failure after the stream started is one
`data: {"error": {...}}` event and no `[DONE]`: OpenAI's SDKs raise on it, so a cut-off
answer is never read as a complete one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from json.encoder import encode_basestring

from ._codes import ERROR_CODES
from ._encoders import Encoder, _dumps
from ._events import Part, ReframerStats, ToolCall, ToolCallDelta

__all__ = ["SKIPPED_HEADER", "OpenAIChunkEncoder", "OpenAICompletionEncoder", "openai_error", "openai_finish_reason", "openai_usage"]

JSON_TYPE = "application/json; charset=utf-8"
# How many upstream frames the Worker could not read (our protocol's `done.skipped`): a
# field of the final chunk or the completion, and a header of a collected answer, only
# when there were some (docs/openai.md).
SKIPPED_FIELD = "skipped_frames"
SKIPPED_HEADER = "x-skipped-frames"

# OpenAI's error `type` for a status; the SDKs pick their exception class by status.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    408: "timeout_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}


def openai_error(code: str, message: str, param: str | None = None) -> dict[str, object]:
    """The `{"error": {...}}` object for one of our codes, in OpenAI's shape."""
    entry = ERROR_CODES.get(code)
    status = entry.status if entry is not None else 500
    error_type = _ERROR_TYPES.get(status, "server_error")
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def openai_usage(usage: Mapping[str, int]) -> dict[str, object]:
    """Our usage counts in OpenAI's shape: prompt tokens read from the prefix cache go
    in `prompt_tokens_details.cached_tokens`, where OpenAI's clients look for them."""
    counts: dict[str, object] = {key: value for key, value in usage.items() if key != "cached_tokens"}
    if "cached_tokens" in usage:
        counts["prompt_tokens_details"] = {"cached_tokens": usage["cached_tokens"]}
    return counts


_OPENAI_FINISH_REASONS = frozenset({"stop", "length", "content_filter", "tool_calls"})


def openai_finish_reason(stats: ReframerStats, max_tokens: int | None) -> str:
    """The finish_reason of a complete answer. Workers AI's native frames carry none: an
    answer that used the whole token budget is reported as `length` (it may well have
    been cut there), any other as `stop`, so truncation never reads as a natural end."""
    if stats.finish_reason in _OPENAI_FINISH_REASONS:
        return stats.finish_reason
    # Other reasons (`function_call`, "other") have no name in this API (legacy functions
    # are refused; OpenAI's five values have no "other"): the text that was sent is the
    # whole answer, as far as anyone can tell. An upstream failure never gets here: it
    # ends the answer with an error.
    usage = stats.usage
    if max_tokens is not None and usage is not None and usage["completion_tokens"] >= max_tokens:
        return "length"
    return "stop"


class _OpenAIEncoder(Encoder):
    """What both encodings share: the completion's id, time and model, and the ending."""

    def __init__(self, *, created: int, max_tokens: int | None = None) -> None:
        """`created`: the Unix time of the answer; `max_tokens`: the budget the model
        was given, to tell an answer cut at it (see openai_finish_reason)."""
        self._created = created
        self._max_tokens = max_tokens
        self._id = ""
        self._model = ""

    def meta(self, *, request_id: str, model: str, stream_id: str | None = None, gateway_log_id: str | None = None) -> str:
        # Not resumable: OpenAI's clients have no way to resume, so `stream_id` is unused.
        self._id = "chatcmpl-" + request_id
        self._model = model
        return ""

    def ping(self) -> str:
        return ""

    def _finish_reason(self, stats: ReframerStats) -> str:
        return openai_finish_reason(stats, self._max_tokens)


class OpenAIChunkEncoder(_OpenAIEncoder):
    """`stream: true`: server-sent `chat.completion.chunk` events.

    Deltas carry the padding in `obfuscation`, the field OpenAI itself adds to stream
    chunks for the same reason (sizes would give away token lengths). Reasoning travels
    as `delta.reasoning_content`, the name most OpenAI-compatible servers use.
    """

    content_type = "text/event-stream; charset=utf-8"

    def __init__(self, *, created: int, max_tokens: int | None = None, include_usage: bool = False) -> None:
        super().__init__(created=created, max_tokens=max_tokens)
        self._include_usage = include_usage
        self._prefix = ""

    def meta(self, *, request_id: str, model: str, stream_id: str | None = None, gateway_log_id: str | None = None) -> str:
        super().meta(request_id=request_id, model=model, stream_id=stream_id, gateway_log_id=gateway_log_id)
        # Everything before `choices` is the same in every chunk: built once.
        self._prefix = (
            f'data: {{"id":"{self._id}","object":"chat.completion.chunk","created":{self._created},'
            f'"model":{encode_basestring(model)},"choices":'
        )
        return self._prefix + '[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n'

    def delta(self, text: str, padding: str) -> str:
        return self._content(encode_basestring(text), padding)

    def json_delta(self, body: str, padding: str) -> str:
        return self._content(f'"{body}"', padding)

    def json_reasoning(self, body: str, padding: str) -> str:
        return self._choice(f'{{"reasoning_content":"{body}"}}', padding)

    def json_deltas(self, bodies: Sequence[str], paddings: Iterable[str]) -> str:
        # A valid JSON string body is a valid content string as it is.
        content = self._content
        return "".join([content(f'"{body}"', pad) for body, pad in zip(bodies, paddings, strict=False)])

    def _content(self, literal: str, padding: str) -> str:
        return (
            f'{self._prefix}[{{"index":0,"delta":{{"content":{literal}}},"logprobs":null,"finish_reason":null}}],'
            f'"obfuscation":"{padding}"}}\n\n'
        )

    def reasoning(self, text: str, padding: str) -> str:
        return self._choice(f'{{"reasoning_content":{encode_basestring(text)}}}', padding)

    def part_start(self, part: Part, padding: str) -> str:
        # OpenAI's stream has no part frames but a call's first fragment: its id, type and
        # name, no arguments yet.
        call = part.call
        if call is None:
            return ""
        return self._choice(
            f'{{"tool_calls":[{{"index":{call.index},"id":{encode_basestring(call.id)},"type":"function",'
            f'"function":{{"name":{encode_basestring(call.name)},"arguments":""}}}}]}}',
            padding,
        )

    def tool_call_delta(self, delta: ToolCallDelta, padding: str) -> str:
        return self._choice(
            f'{{"tool_calls":[{{"index":{delta.index},"function":{{"arguments":{encode_basestring(delta.arguments)}}}}}]}}',
            padding,
        )

    def tool_call(self, call: ToolCall) -> str:
        return ""  # OpenAI's stream has no end-of-call chunk: the next call or the finish says it

    def _choice(self, delta: str, padding: str) -> str:
        return (
            f'{self._prefix}[{{"index":0,"delta":{delta},"logprobs":null,'
            f'"finish_reason":null}}],"obfuscation":"{padding}"}}\n\n'
        )

    def ping(self) -> str:
        # A comment: OpenAI's SDKs skip it, proxies see the connection alive.
        return ": ping\n\n"

    def done(self, stats: ReframerStats) -> str:
        finish = _dumps({"index": 0, "delta": {}, "logprobs": None, "finish_reason": self._finish_reason(stats)})
        # Frames the Worker could not read are named on the last chunk with choices, where
        # a client that reads the finish reason looks (an extra key: the SDKs keep it).
        gap = f',"{SKIPPED_FIELD}":{stats.skipped}' if stats.skipped else ""
        out = [f"{self._prefix}[{finish}]{gap}}}\n\n"]
        if self._include_usage and stats.usage is not None:
            out.append(f'{self._prefix}[],"usage":{_dumps(openai_usage(stats.usage))}}}\n\n')
        out.append("data: [DONE]\n\n")
        return "".join(out)

    def error(self, *, code: str, message: str, request_id: str) -> str:
        return f"data: {_dumps(openai_error(code, message))}\n\n"


class OpenAICompletionEncoder(_OpenAIEncoder):
    """`stream: false`: frames produce nothing until the end, which is the whole
    `chat.completion` object (or the error object). The text is collected here, so the
    caller bounds it (the Reframer's `stats.chars`) and sets the status from the error
    code's table entry."""

    content_type = JSON_TYPE

    def __init__(self, *, created: int, max_tokens: int | None = None) -> None:
        super().__init__(created=created, max_tokens=max_tokens)
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._tool_calls: list[dict[str, object]] = []

    @property
    def headers(self) -> dict[str, str]:
        return {"content-type": self.content_type}

    def delta(self, text: str, padding: str) -> str:
        self._text.append(text)
        return ""

    def reasoning(self, text: str, padding: str) -> str:
        self._reasoning.append(text)
        return ""

    def part_start(self, part: Part, padding: str) -> str:
        return ""

    def tool_call_delta(self, delta: ToolCallDelta, padding: str) -> str:
        return ""

    def tool_call(self, call: ToolCall) -> str:
        self._tool_calls.append({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}})
        return ""

    def done(self, stats: ReframerStats) -> str:
        text = "".join(self._text)
        # OpenAI's shape: no text beside tool calls is `null`, not "".
        content = None if self._tool_calls and not text else text
        message: dict[str, object] = {"role": "assistant", "content": content, "refusal": None}
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if self._tool_calls:
            message["tool_calls"] = self._tool_calls
            self._tool_calls = []
        self._text.clear()
        self._reasoning.clear()
        completion: Mapping[str, object] = {
            "id": self._id,
            "object": "chat.completion",
            "created": self._created,
            "model": self._model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": self._finish_reason(stats)}],
            "usage": None if stats.usage is None else openai_usage(stats.usage),
        }
        if stats.skipped:
            completion = {**completion, SKIPPED_FIELD: stats.skipped}
        return _dumps(completion)

    def error(self, *, code: str, message: str, request_id: str) -> str:
        self._text.clear()
        self._reasoning.clear()
        self._tool_calls.clear()
        return _dumps(openai_error(code, message))
