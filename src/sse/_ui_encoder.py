"""The Vercel AI SDK "UI message stream" (v1) as a third encoding of the protocol.

An app using the `ai` package's `useChat` reads this without an adapter: SSE frames whose
data is a JSON chunk (`start`, `text-start`, `text-delta`, `text-end`, `reasoning-*`,
`finish`, `error`), ended by `data: [DONE]`. Text and reasoning arrive as parts that are
opened once and closed before the stream ends, so this encoder keeps that state; every
response needs its own instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from json.encoder import encode_basestring

from ._encoders import Encoder, _dumps
from ._events import ReframerStats

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
    "error": "error",
}


def _frame(chunk: Mapping[str, object]) -> str:
    return f"data: {_dumps(chunk)}\n\n"


class UIMessageStreamEncoder(Encoder):
    content_type = "text/event-stream; charset=utf-8"

    @property
    def headers(self) -> dict[str, str]:
        return {**super().headers, UI_MESSAGE_STREAM_HEADER[0]: UI_MESSAGE_STREAM_HEADER[1]}

    def __init__(self) -> None:
        self._message_id = ""
        self._open: str | None = None  # "text" or "reasoning": the part being streamed
        self._parts = 0

    def meta(self, *, request_id: str, model: str, stream_id: str | None = None, gateway_log_id: str | None = None) -> str:
        # A resumable UI stream is found by its chat id, so stream_id is not sent.
        self._message_id = request_id
        metadata = {"model": model}
        if gateway_log_id is not None:
            metadata["gatewayLogId"] = gateway_log_id
        return _frame({"type": "start", "messageId": request_id, "messageMetadata": metadata})

    def delta(self, text: str, padding: str) -> str:
        # `p` rides along as an extra key (the SDK's chunk schemas are loose objects), so
        # frame sizes keep hiding token lengths here too.
        opening = self._switch_to("text")
        return f'{opening}data: {{"type":"text-delta","id":"{self._part_id()}","delta":{encode_basestring(text)},"p":"{padding}"}}\n\n'

    def reasoning(self, text: str, padding: str) -> str:
        opening = self._switch_to("reasoning")
        return f'{opening}data: {{"type":"reasoning-delta","id":"{self._part_id()}","delta":{encode_basestring(text)},"p":"{padding}"}}\n\n'

    def ping(self) -> str:
        return ": ping\n\n"

    def done(self, stats: ReframerStats) -> str:
        finish: dict[str, object] = {"type": "finish"}
        if stats.finish_reason is not None:
            finish["finishReason"] = _FINISH_REASONS.get(stats.finish_reason, "other")
        if stats.usage is not None:
            finish["messageMetadata"] = {"usage": dict(stats.usage)}
        return self._close_part() + _frame(finish) + "data: [DONE]\n\n"

    def error(self, *, code: str, message: str, request_id: str) -> str:
        # errorText is the generic message; the code travels in the text for people, the
        # request id for support. No finish chunk: the answer did not finish.
        failure = {"type": "error", "errorText": f"{message} ({code}, request {request_id})"}
        return self._close_part() + _frame(failure) + "data: [DONE]\n\n"

    # --- parts -------------------------------------------------------------------------

    def _part_id(self) -> str:
        return f"{self._message_id}-{self._parts}"

    def _switch_to(self, kind: str) -> str:
        if self._open == kind:
            return ""
        closing = self._close_part()
        self._parts += 1
        self._open = kind
        return closing + _frame({"type": f"{kind}-start", "id": self._part_id()})

    def _close_part(self) -> str:
        if self._open is None:
            return ""
        closing = _frame({"type": f"{self._open}-end", "id": self._part_id()})
        self._open = None
        return closing
