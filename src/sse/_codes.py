"""Every error code a client can see, in one table: its HTTP status and generic message.

Each API surface renders an entry in its own shape: this project's JSON error and stream
`error` event, the AI SDK's `error` chunk, OpenAI's `{"error": {...}}`. The messages are
fixed and generic, so no provider detail or stack trace reaches a client; a 400 may carry
a more specific message naming the field, never content from elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["ERROR_CODES", "ERROR_MESSAGES", "ErrorCode"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorCode:
    """`status` is the HTTP status of a failure before a stream starts; a code that only
    ends streams (`in_stream` and never raised before one) has the status it stands for,
    which surfaces without a status of their own use to pick an error type.
    """

    code: str
    status: int
    message: str
    in_stream: bool = False  # may end a started stream as its terminal `error`


def _table(*entries: ErrorCode) -> Mapping[str, ErrorCode]:
    return MappingProxyType({entry.code: entry for entry in entries})


ERROR_CODES: Mapping[str, ErrorCode] = _table(
    # The request.
    ErrorCode(code="invalid_json", status=400, message="The request body is not valid JSON."),
    ErrorCode(code="invalid_request", status=400, message="The request is not valid."),
    ErrorCode(code="invalid_stream_id", status=400, message="The stream id is not one this Worker gave out."),
    ErrorCode(code="invalid_last_event_id", status=400, message="Last-Event-ID must be an event id of this stream."),
    ErrorCode(code="previous_response_not_found", status=400, message="There is no stored response with this id."),
    ErrorCode(code="unauthorized", status=401, message="A valid bearer token is required."),
    ErrorCode(code="origin_not_allowed", status=403, message="This origin may not use the API."),
    ErrorCode(code="not_found", status=404, message="There is nothing at this path."),
    ErrorCode(code="model_not_found", status=404, message="This model is not served here."),
    ErrorCode(code="stream_not_found", status=404, message="There is no answer with this id, or it has expired."),
    ErrorCode(code="response_not_found", status=404, message="There is no stored response with this id, or it has expired."),
    ErrorCode(code="item_not_found", status=404, message="There is no stored item with this id, or it has expired."),
    ErrorCode(code="conversation_not_found", status=404, message="There is no conversation with this id, or it has expired."),
    ErrorCode(code="method_not_allowed", status=405, message="This method is not allowed here."),
    ErrorCode(code="payload_too_large", status=413, message="The request body is too large."),
    ErrorCode(code="unsupported_media_type", status=415, message="Send the request body as application/json."),
    # Workers AI refuses the model itself (its errors 5007 and 5035, client errors there).
    # Every model a client can name here is one the Worker's configuration names (others
    # are model_not_found before any call), so a 5007 means that configuration went stale,
    # as on 2026-05-30 when eighteen models were retired: the server's fault, a 5xx that
    # alerts fire on, never a 400 that tells the client to change its request.
    ErrorCode(code="model_misconfigured", status=502, message="This Worker is configured with a model Workers AI does not serve (retired, or never existed). Its operator needs to update MODEL or FALLBACK_MODELS."),
    ErrorCode(code="model_requires_paid_plan", status=403, message="This model needs the Workers Paid plan on the Worker's account."),
    # Two limits, two codes: this Worker's own limit on the client, and the model's
    # capacity (Workers AI's 3040, or 3036 when the account's daily free allocation is
    # spent). Both are 429s with Retry-After.
    ErrorCode(code="rate_limited", status=429, message="Too many requests from this client. Please retry after the time in Retry-After."),
    ErrorCode(code="model_busy", status=429, message="The model has no capacity for this request right now. Please retry after the time in Retry-After."),
    # The model, before and while it streams.
    ErrorCode(code="model_unavailable", status=502, message="The model is unavailable right now. Please try again.", in_stream=True),
    ErrorCode(code="upstream_timeout", status=504, message="The model did not answer in time. Please try again.", in_stream=True),
    ErrorCode(code="generation_failed", status=502, message="The model stream failed.", in_stream=True),
    ErrorCode(code="upstream_incomplete", status=502, message="The model stream ended before it was complete.", in_stream=True),
    ErrorCode(code="upstream_malformed", status=502, message="The model stream could not be read.", in_stream=True),
    ErrorCode(code="tool_calls_too_large", status=502, message="The model's tool calls went over this service's limits.", in_stream=True),
    # Structured outputs (docs/structured-outputs.md): the model ended of its own accord,
    # and what it wrote is not what the client asked for.
    ErrorCode(code="output_not_json", status=502, message="The model's answer is not the JSON that was asked for.", in_stream=True),
    ErrorCode(code="output_schema_mismatch", status=502, message="The model's answer does not follow the requested JSON schema.", in_stream=True),
    ErrorCode(code="output_too_large", status=502, message="The model's answer is too long for this service to check against the requested format.", in_stream=True),
    ErrorCode(code="client_timeout", status=408, message="The stream waited too long for the client to read it.", in_stream=True),
    # Resumable answers (docs/protocol.md, "Resumable answers").
    ErrorCode(code="stopped", status=409, message="The answer was stopped on request.", in_stream=True),
    ErrorCode(code="abandoned", status=408, message="Nobody was reading the answer, so it was stopped.", in_stream=True),
    ErrorCode(code="interrupted", status=503, message="The server restarted before the answer was complete.", in_stream=True),
    ErrorCode(code="expired", status=410, message="The answer expired before this reader had read all of it.", in_stream=True),
    # Stored responses of /v1/responses (docs/openai.md, "Stored and background responses").
    ErrorCode(code="cancelled", status=409, message="The response was cancelled by its client.", in_stream=True),
    ErrorCode(code="deleted", status=410, message="The response was deleted by its client.", in_stream=True),
    ErrorCode(code="background_time_limit", status=504, message="The background response ran past its time limit.", in_stream=True),
    # The Worker itself.
    ErrorCode(code="internal_error", status=500, message="Something went wrong on our side.", in_stream=True),
)

# The codes that can end a started stream, and the only messages a stream's `error` carries.
ERROR_MESSAGES: Mapping[str, str] = MappingProxyType(
    {entry.code: entry.message for entry in ERROR_CODES.values() if entry.in_stream}
)
