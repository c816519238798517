"""The OpenAI-compatible surface (docs/openai.md): a Chat Completions request checked
before any inference, OpenAI's error shape, and the model list. Pure Python.

Unknown fields are ignored, as OpenAI does; fields whose meaning this Worker cannot
honour (more than one choice, response formats, log probabilities, the legacy
`functions`, ...) get a 400 naming the field rather than an answer that silently ignored
them. Tools, and the tool calls and results of the history, are chat.api.tools'.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from chat.api.validation import checked_max_tokens, checked_message_list, checked_sampling, checked_turn
from chat.config import Config
from chat.turn import ChatTurn
from chat.web.errors import ApiError, invalid_request
from sse import openai_error

MAX_STOP_SEQUENCES = 4  # OpenAI's own limit
MAX_STOP_CHARS = 256
MAX_SEED = 9_999_999_999  # Workers AI's bound on `seed`


@dataclass(frozen=True, kw_only=True)
class CompletionRequest:
    """A checked Chat Completions request: the turn (its `models` are the requested model
    first, then the Worker's other models in their configured order), and how to answer."""

    turn: ChatTurn
    stream: bool
    include_usage: bool
    obfuscation: bool


def openai_error_body(error: ApiError, request_id: str) -> str:
    """OpenAI's `{"error": {"message", "type", "param", "code"}}`; the request id travels
    in the x-request-id header, where OpenAI's SDKs read it."""
    return json.dumps(openai_error(error.code, error.message, error.param))


def model_list(config: Config) -> dict[str, Any]:
    """GET /v1/models: the models this Worker serves, in OpenAI's list shape. Workers AI
    does not say when a model was made, so `created` is 0."""
    return {
        "object": "list",
        "data": [{"id": model, "object": "model", "created": 0, "owned_by": "workers-ai"} for model in config.served_models],
    }


def validate_completion(payload: Any, config: Config) -> CompletionRequest:
    """The request in `payload`, or ApiError: 400 `invalid_request` naming the field (in
    the message and in `param`), 404 `model_not_found` for a model not served here."""
    if not isinstance(payload, dict):
        raise invalid_request("The request body must be a JSON object.")
    _refuse_what_cannot_be_honoured(payload)
    messages = checked_message_list(payload, config)
    plain = [_plain_message(message, index) for index, message in enumerate(messages)]
    stream, options = streaming(payload)
    turn = checked_turn(payload, plain, config, position=lambda index: index, system=config.openai_system_messages,
                        model_required=True, max_tokens=_max_tokens(payload, config))
    turn = replace(turn, options=model_options(payload, turn.models[0]), stop=_stop(payload.get("stop")))
    return CompletionRequest(
        turn=turn,
        stream=stream,
        include_usage=flag(options, "include_usage", "stream_options."),
        obfuscation=flag(options, "include_obfuscation", "stream_options.", default=True),
    )


# Each field this Worker cannot honour, and the values that ask for nothing it lacks.
_NOT_HONOURED: tuple[tuple[str, tuple[Any, ...], str], ...] = (
    ("functions", ([],), "the legacy form of tools, not supported here; send tools"),
    ("function_call", ("none",), "the legacy form of tool_choice, not supported here; send tool_choice with tools"),
    ("logprobs", (False,), "log probabilities are not available here"),
    ("top_logprobs", (0,), "log probabilities are not available here"),
    ("logit_bias", ({},), "logit_bias is not supported here"),
    ("audio", (), "audio output is not supported here"),
    ("modalities", (["text"],), "only text output is supported here"),
)


def _refuse_what_cannot_be_honoured(payload: dict[str, Any]) -> None:
    n = payload.get("n")
    if n is not None and not (type(n) is int and n == 1):
        raise invalid_request("n: only one choice (n = 1) is supported here.", param="n")
    for field, harmless, reason in _NOT_HONOURED:
        value = payload.get(field)
        # `type(...) is` keeps True from passing for 1 and 0 for False.
        if value is not None and not any(type(value) is type(ok) and value == ok for ok in harmless):
            raise invalid_request(f"{field}: {reason}.", param=field)


def _plain_message(message: Any, index: int) -> Any:
    """An OpenAI message reduced to what checked_messages reads: `developer` is a system
    message, text parts are joined (a tool result's too) but a user message's, which may
    hold images, `name` is dropped, `tool_calls`
    and `tool_call_id` are kept. The legacy function messages are refused with a pointer
    to their tool forms; anything else is left for checked_messages to refuse."""
    where = f"messages[{index}]"
    if not isinstance(message, dict):
        return message
    if message.get("function_call"):
        field = f"{where}.function_call"
        raise invalid_request(f"{field}: the legacy form of tool_calls, not supported here; send tool_calls.", param=field)
    role = message.get("role")
    if role == "function":
        raise invalid_request(f'{where}.role: function messages are the legacy form, not supported here; send "tool" messages '
                              "with tool_call_id.", param=f"{where}.role")
    content = message.get("content")
    if isinstance(content, list) and role != "user":  # a user's parts, images among them, are checked_messages'
        texts = []
        for part_index, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                field = f"{where}.content[{part_index}]"
                raise invalid_request(f"{field}: only text parts are taken in a message of this role; images go in user messages.",
                                      param=field)
            texts.append(part["text"])
        content = "\n".join(texts)
    plain = {"role": "system" if role == "developer" else role, "content": content}
    for key in ("tool_calls", "tool_call_id"):
        if key in message:
            plain[key] = message[key]
    return plain


def streaming(payload: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """`stream`, and `stream_options` ({} when absent), which OpenAI allows only with it."""
    stream = flag(payload, "stream")
    options = payload.get("stream_options")
    if options is not None and not stream:
        raise invalid_request("stream_options is only allowed when stream is true.", param="stream_options")
    if options is not None and not isinstance(options, dict):
        raise invalid_request("stream_options must be an object.", param="stream_options")
    return stream, options or {}


def flag(payload: dict[str, Any], field: str, prefix: str = "", *, default: bool = False) -> bool:
    value = payload.get(field)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid_request(f"{prefix}{field} must be true or false.", param=prefix + field)
    return value


def _max_tokens(payload: dict[str, Any], config: Config) -> int:
    # max_completion_tokens is OpenAI's newer name for max_tokens; both mean the same here.
    legacy, current = payload.get("max_tokens"), payload.get("max_completion_tokens")
    if current is None:
        return checked_max_tokens(legacy, config)
    budget = checked_max_tokens(current, config, "max_completion_tokens")
    # Each is checked on its own first: `true` equals 1 in Python, and must not pass as it.
    if legacy is not None and checked_max_tokens(legacy, config) != budget:
        raise invalid_request("max_tokens and max_completion_tokens differ; send one of them.", param="max_completion_tokens")
    return budget


def model_options(payload: dict[str, Any], model: str) -> tuple[tuple[str, float | int], ...]:
    # Ranges as the requested model's schema gives them (chat.model.catalog); a fallback that
    # takes less gets the value clamped into its own.
    options: list[tuple[str, float | int]] = []
    for field in ("top_p", "frequency_penalty", "presence_penalty"):
        if payload.get(field) is not None:
            options.append((field, checked_sampling(payload[field], field, model)))
    seed = payload.get("seed")
    if seed is not None:
        if type(seed) is not int or not 0 <= seed <= MAX_SEED:
            raise invalid_request(f"seed must be an integer between 0 and {MAX_SEED}.", param="seed")
        options.append(("seed", seed))
    return tuple(options)


def _stop(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return checked_stops([value] if isinstance(value, str) else value, "stop", "a string or a list", MAX_STOP_SEQUENCES)


def checked_stops(stops: Any, field: str, shape: str, most: int) -> tuple[str, ...]:
    """Stop sequences: a list of at most `most` strings of 1 to MAX_STOP_CHARS characters;
    else ApiError(400) naming `field`, which takes `shape`."""
    if not isinstance(stops, list) or len(stops) > most:
        raise invalid_request(f"{field} must be {shape} of at most {most} strings.", param=field)
    for stop in stops:
        if not isinstance(stop, str) or not 1 <= len(stop) <= MAX_STOP_CHARS:
            raise invalid_request(f"{field}: each sequence must be a string of 1 to {MAX_STOP_CHARS} characters.", param=field)
    return tuple(stops)
