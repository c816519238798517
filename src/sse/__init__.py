"""The SSE core: a sans-IO event-stream parser (a receive buffer that hands out whole
events, and a reader of their lines), upstream normalizer, the answer's parts (where each
starts and ends, decided once), protocol encoders written in one vocabulary of events
(_events: our SSE and NDJSON, the Vercel AI SDK UI message stream, OpenAI chunks and
completions, OpenAI Responses, Anthropic Messages), the Reframer that composes them, and the one table of
client-facing error codes every surface renders.
Plain Python with no I/O, so it runs unchanged on CPython and inside the Worker's Pyodide.
"""

from ._answer_check import AnswerCheck
from ._anthropic_encoder import AnthropicEncoder, anthropic_error, anthropic_usage
from ._codes import ERROR_CODES, ERROR_MESSAGES, ErrorCode
from ._encoders import STREAM_HEADERS, Encoder, NDJSONEncoder, SSEEncoder
from ._errors import (
    EventTooLargeError,
    LineTooLongError,
    SSEError,
    StreamClosedError,
)
from ._events import Event, Part, PartEnding, PartKind, ReframerStats, ToolCall, ToolCallDelta, ToolCallStart
from ._json import MAX_JSON_DEPTH, JSONDepthError, loads_bounded, portable_json
from ._normalizer import KNOWN_FINISH_REASONS, UpstreamNormalizer
from ._numbering import FAST_PATH_MAX_CHARS, FrameNumberer
from ._openai_encoder import (
    SKIPPED_HEADER,
    OpenAIChunkEncoder,
    OpenAICompletionEncoder,
    openai_error,
    openai_finish_reason,
    openai_usage,
)
from ._padding import DEFAULT_MAX_PADDING, MAX_PADDING
from ._parser import EventReader, EventStreamParser
from ._receivebuffer import DEFAULT_MAX_EVENT_CHARS, DEFAULT_MAX_LINE_BYTES, ReceiveBuffer
from ._reframer import CUT_SHORT_REASONS, Reframer
from ._replay import MAX_EVENT_ID_DIGITS, EventNumberer, ReplayFormat, ReplayWriter, StoredEvent, parse_event_id
from ._responses_encoder import (
    MAX_HELD_ANSWER_CHARS,
    MAX_OUTPUT_ITEMS,
    MAX_STORED_ANSWER_CHARS,
    MAX_STORED_EVENT_BYTES,
    MAX_STORED_HEAD_BYTES,
    ResponsesEncoder,
    responses_usage,
)
from ._tool_calls import MAX_TOOL_ARGUMENT_CHARS, MAX_TOOL_CALL_CHARS, MAX_TOOL_CALLS
from ._ui_encoder import UI_MESSAGE_STREAM_HEADER, UIMessageStreamEncoder
from ._workers_ai_errors import RATE_LIMIT_CODES, TIMEOUT_CODES, binding_error_code

__all__ = [
    "AnswerCheck",
    "AnthropicEncoder",
    "CUT_SHORT_REASONS",
    "DEFAULT_MAX_EVENT_CHARS",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_PADDING",
    "ERROR_CODES",
    "ERROR_MESSAGES",
    "FAST_PATH_MAX_CHARS",
    "MAX_PADDING",
    "MAX_TOOL_ARGUMENT_CHARS",
    "MAX_TOOL_CALL_CHARS",
    "MAX_TOOL_CALLS",
    "Encoder",
    "ErrorCode",
    "Event",
    "EventTooLargeError",
    "EventNumberer",
    "EventReader",
    "EventStreamParser",
    "FrameNumberer",
    "JSONDepthError",
    "KNOWN_FINISH_REASONS",
    "LineTooLongError",
    "MAX_EVENT_ID_DIGITS",
    "MAX_HELD_ANSWER_CHARS",
    "MAX_OUTPUT_ITEMS",
    "MAX_STORED_ANSWER_CHARS",
    "MAX_STORED_EVENT_BYTES",
    "MAX_STORED_HEAD_BYTES",
    "MAX_JSON_DEPTH",
    "NDJSONEncoder",
    "OpenAIChunkEncoder",
    "OpenAICompletionEncoder",
    "Part",
    "PartEnding",
    "PartKind",
    "RATE_LIMIT_CODES",
    "ReceiveBuffer",
    "ReplayFormat",
    "ResponsesEncoder",
    "ReplayWriter",
    "Reframer",
    "ReframerStats",
    "SSEEncoder",
    "SKIPPED_HEADER",
    "SSEError",
    "STREAM_HEADERS",
    "StoredEvent",
    "StreamClosedError",
    "TIMEOUT_CODES",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallStart",
    "UIMessageStreamEncoder",
    "UI_MESSAGE_STREAM_HEADER",
    "UpstreamNormalizer",
    "anthropic_error",
    "anthropic_usage",
    "binding_error_code",
    "loads_bounded",
    "openai_error",
    "openai_finish_reason",
    "openai_usage",
    "parse_event_id",
    "portable_json",
    "responses_usage",
]
