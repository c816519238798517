"""Checks a chat turn before any inference: pure Python, so it is unit-tested on CPython."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from .api_errors import ApiError, invalid_request
from .config import Config

ROLES = ("user", "assistant")
MAX_TEMPERATURE = 5.0


@dataclass(frozen=True, kw_only=True)
class ChatTurn:
    messages: tuple[dict[str, str], ...]
    max_tokens: int
    temperature: float | None

    def model_inputs(self, system_prompt: str) -> dict[str, Any]:
        messages = [dict(m) for m in self.messages]
        if system_prompt:
            messages.insert(0, {"role": "system", "content": system_prompt})
        inputs: dict[str, Any] = {"messages": messages, "stream": True, "max_tokens": self.max_tokens}
        if self.temperature is not None:
            inputs["temperature"] = self.temperature
        return inputs


def is_json_media_type(content_type: str | None) -> bool:
    if not content_type:
        return False
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


def parse_json_body(body: bytes) -> Any:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "invalid_json", "The request body is not valid UTF-8.") from None
    try:
        return json.loads(text)
    except ValueError:
        raise ApiError(400, "invalid_json", "The request body is not valid JSON.") from None


def validate_chat(payload: Any, config: Config) -> ChatTurn:
    """The chat turn in `payload`, or ApiError(400, invalid_request) naming the bad field."""
    if not isinstance(payload, dict):
        raise invalid_request("The request body must be a JSON object.")
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid_request("messages must be a non-empty list.")
    if len(messages) > config.max_messages:
        raise invalid_request(f"messages has {len(messages)} entries; at most {config.max_messages} are allowed.")
    checked = []
    total_chars = 0
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise invalid_request(f"messages[{index}] must be an object.")
        role = message.get("role")
        if role == "system":
            raise invalid_request(f"messages[{index}].role: system messages are set by the server.")
        if role not in ROLES:
            raise invalid_request(f"messages[{index}].role must be \"user\" or \"assistant\".")
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            raise invalid_request(f"messages[{index}].content must be a non-empty string.")
        total_chars += len(content)
        checked.append({"role": role, "content": content})
    if total_chars > config.max_input_chars:
        raise invalid_request(f"messages content totals {total_chars} characters; at most {config.max_input_chars} are allowed.")
    if checked[-1]["role"] != "user":
        raise invalid_request("The last message must come from the user.")
    return ChatTurn(
        messages=tuple(checked),
        max_tokens=_max_tokens(payload.get("max_tokens"), config),
        temperature=_temperature(payload.get("temperature")),
    )


def _max_tokens(value: Any, config: Config) -> int:
    if value is None:
        return config.max_tokens
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_request("max_tokens must be an integer.")
    if not 1 <= value <= config.max_tokens:
        raise invalid_request(f"max_tokens must be between 1 and {config.max_tokens}.")
    return value


def _temperature(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid_request("temperature must be a number.")
    if not math.isfinite(value) or not 0 <= value <= MAX_TEMPERATURE:
        raise invalid_request(f"temperature must be between 0 and {MAX_TEMPERATURE:g}.")
    return float(value)


def validate_ui_chat(payload: Any, config: Config) -> ChatTurn:
    """A chat turn from the AI SDK's `useChat` body (`messages` as UIMessages with `parts`).

    The text parts of each message become its content; other parts (files, tool calls,
    step markers) carry nothing the model call uses and are left out. Then the same rules
    as /api/chat apply, with field names pointing at the UIMessage.
    """
    if not isinstance(payload, dict):
        raise invalid_request("The request body must be a JSON object.")
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid_request("messages must be a non-empty list.")
    plain = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise invalid_request(f"messages[{index}] must be a UI message with a list of parts.")
        texts = [part.get("text") for part in message["parts"] if isinstance(part, dict) and part.get("type") == "text"]
        if not all(isinstance(text, str) for text in texts):
            raise invalid_request(f"messages[{index}].parts: a text part needs a string text.")
        plain.append({"role": message.get("role"), "content": "".join(texts)})
    return validate_chat({**payload, "messages": plain}, config)
