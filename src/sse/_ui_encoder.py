"""The Vercel AI SDK "UI message stream" (v1) as a third encoding of the protocol.

An app using the `ai` package's `useChat` reads this without an adapter: SSE frames whose
data is a JSON chunk (`start`, `start-step`, `text-start`, `text-delta`, `text-end`,
`reasoning-*`, `tool-input-start`, `tool-input-delta`, `tool-input-available` or
`tool-input-error`, `finish-step`, `finish`, `error`), ended by `data: [DONE]`. Text and
reasoning arrive as parts, opened once and closed before the stream ends (where the core,
sse._parts, starts and ends them); this encoder keeps the id of the open one and each
call's, so every response needs its own instance.

Each answer is one step. The step matters for tools: after the client adds a tool's result,
the SDK sends the conversation again and appends the next answer to the same message; its
`start-step` is what tells the SDK (lastAssistantMessageIsCompleteWithToolCalls) that the
calls before it were answered, and not to send them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from json.encoder import encode_basestring

from ._encoders import Encoder, _dumps
from ._events import Part, PartEnding, PartKind, ReframerStats, ToolCall, ToolCallDelta

__all__ = ["UIMessageStreamEncoder", "UI_MESSAGE_STREAM_HEADER"]

# The response header that tells the AI SDK which stream protocol it is reading.
UI_MESSAGE_STREAM_HEADER = ("x-vercel-ai-ui-message-stream", "v1")

# The model's finish reasons (sse.KNOWN_FINISH_REASONS) in the SDK's spelling.
_FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
}


def _frame(chunk: Mapping[str, object]) -> str:
    return f"data: {_dumps(chunk)}\n\n"


class UIMessageStreamEncoder(Encoder):
    content_type = "text/event-stream; charset=utf-8"

    @property
    def headers(self) -> dict[str, str]:
        return {**super().headers, UI_MESSAGE_STREAM_HEADER[0]: UI_MESSAGE_STREAM_HEADER[1]}

    def __init__(self, *, message_id: str | None = None) -> None:
        """`message_id`: the assistant message this answer continues (the conversation
        ended with it, as after a tool's result); None: a new message, named by the
        request id."""
        self._continues = message_id
        self._request_id = ""  # names this answer's parts, unique to it
        self._part_id = ""  # the open text or reasoning part's
        self._tool_ids: dict[int, str] = {}  # a call's index -> its id, for its deltas

    def meta(self, *, request_id: str, model: str, stream_id: str | None = None, gateway_log_id: str | None = None) -> str:
        # A resumable UI stream is found by its chat id, so stream_id is not sent.
        self._request_id = request_id
        metadata = {"model": model}
        if gateway_log_id is not None:
            metadata["gatewayLogId"] = gateway_log_id
        start = {"type": "start", "messageId": self._continues or request_id, "messageMetadata": metadata}
        return _frame(start) + _frame({"type": "start-step"})

    def part_start(self, part: Part, padding: str) -> str:
        call = part.call
        if call is not None:
            self._tool_ids[call.index] = call.id
            return _frame({"type": "tool-input-start", "toolCallId": call.id, "toolName": call.name, "p": padding})
        # Numbered from 1 among all the answer's parts, calls included: unique to it.
        self._part_id = f"{self._request_id}-{part.number + 1}"
        return _frame({"type": f"{part.kind.value}-start", "id": self._part_id})

    def part_end(self, part: Part, ending: PartEnding) -> str:
        # A part cut off or failed ends too: the SDK then shows what it got.
        if part.kind is PartKind.TOOL_CALL:
            return ""  # its input was whole (tool-input-available) or the answer failed (error)
        return _frame({"type": f"{part.kind.value}-end", "id": self._part_id})

    def delta(self, text: str, padding: str) -> str:
        # `p` rides along as an extra key (the SDK's chunk schemas are loose objects), so
        # frame sizes keep hiding token lengths here too.
        return f'data: {{"type":"text-delta","id":"{self._part_id}","delta":{encode_basestring(text)},"p":"{padding}"}}\n\n'

    def reasoning(self, text: str, padding: str) -> str:
        return f'data: {{"type":"reasoning-delta","id":"{self._part_id}","delta":{encode_basestring(text)},"p":"{padding}"}}\n\n'

    def tool_call_delta(self, delta: ToolCallDelta, padding: str) -> str:
        return (f'data: {{"type":"tool-input-delta","toolCallId":{encode_basestring(self._tool_ids[delta.index])},'
                f'"inputTextDelta":{encode_basestring(delta.arguments)},"p":"{padding}"}}\n\n')

    def tool_call(self, call: ToolCall) -> str:
        if call.input_error is None:
            return _frame({"type": "tool-input-available", "toolCallId": call.id, "toolName": call.name, "input": call.input})
        # The SDK's own shape for a call whose input does not parse: the raw text as input.
        return _frame({"type": "tool-input-error", "toolCallId": call.id, "toolName": call.name, "input": call.arguments,
                       "errorText": call.input_error})

    def ping(self) -> str:
        return ": ping\n\n"

    def done(self, stats: ReframerStats) -> str:
        finish: dict[str, object] = {"type": "finish"}
        if stats.finish_reason is not None:
            finish["finishReason"] = _FINISH_REASONS.get(stats.finish_reason, "other")
        metadata: dict[str, object] = {}
        if stats.usage is not None:
            metadata["usage"] = dict(stats.usage)
        if stats.skipped:
            # Frames the Worker could not read: the answer may have gaps (done.skipped).
            metadata["skipped"] = stats.skipped
        if metadata:
            finish["messageMetadata"] = metadata
        return _frame({"type": "finish-step"}) + _frame(finish) + "data: [DONE]\n\n"

    def error(self, *, code: str, message: str, request_id: str) -> str:
        # errorText is the generic message; the code travels in the text for people, the
        # request id for support. No finish chunk: the answer did not finish.
        failure = {"type": "error", "errorText": f"{message} ({code}, request {request_id})"}
        return _frame(failure) + "data: [DONE]\n\n"
