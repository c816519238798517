"""Every numeric limit of chat.api.validation at its boundary: the limit itself is accepted,
one past it is refused (or, for a message id, no longer continued)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from chat.api import tools
from chat.api.validation import MAX_CHAT_ID_CHARS, parse_json_body, validate_chat, validate_ui_chat
from chat.config import Config
from chat.model import catalog
from chat.turn import ChatTurn
from chat.web.errors import ApiError
from sse import MAX_JSON_DEPTH

MAX_TOKENS, MAX_MESSAGES, MAX_INPUT_CHARS = 100, 5, 40
CONFIG = Config(model="@cf/zai-org/glm-4.7-flash", max_tokens=MAX_TOKENS, max_messages=MAX_MESSAGES, max_input_chars=MAX_INPUT_CHARS)
LOWEST_TEMPERATURE, HIGHEST_TEMPERATURE = catalog.sampling_range(CONFIG.model, "temperature")

Validate = Callable[[Any, Config], ChatTurn]


def user(content: str = "hi") -> dict[str, str]:
    return {"role": "user", "content": content}


def turn(**fields: Any) -> dict[str, Any]:
    return {"messages": [user()], **fields}


def chat_of(count: int) -> dict[str, Any]:
    """`count` messages, alternating user and assistant, ending with the user's."""
    return {"messages": [user() if (count - i) % 2 else {"role": "assistant", "content": "ok"} for i in range(count)]}


def chat_of_chars(chars: int) -> dict[str, Any]:
    """Content of `chars` characters in all, spread over a user, an assistant and a user message."""
    first = chars // 2
    return {"messages": [user("a" * first), {"role": "assistant", "content": "b" * (chars - first - 1)}, user("c")]}


def ui(role: str, *parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"role": role, "parts": list(parts), **fields}


TEXT = {"type": "text", "text": "hi"}
THOUGHT = {"type": "reasoning", "text": "thinking"}


def ui_chat_of(count: int) -> dict[str, Any]:
    """`count` UI messages of which all but two are skipped (only reasoning): two model messages."""
    return {"messages": [ui("user", TEXT), *[ui("assistant", THOUGHT)] * (count - 2), ui("user", TEXT)]}


def ui_chat_making(model_messages: int) -> dict[str, Any]:
    """Three UI messages that become `model_messages` (4 or more): the user's, an assistant
    step of calls, a result message each, the assistant's text, and the user's again."""
    calls = [{"type": "tool-clock", "toolCallId": f"c{i}", "state": "output-available", "input": {}, "output": "13:00"}
             for i in range(model_messages - 4)]
    return {"messages": [ui("user", TEXT), ui("assistant", *calls, {"type": "step-start"}, TEXT), ui("user", TEXT)]}


def resumable_ui_chat(chat_id: str) -> dict[str, Any]:
    return {"id": chat_id, "resumable": True, "messages": [ui("user", TEXT)]}


BOUNDS = [
    pytest.param(validate_chat, turn(max_tokens=1), turn(max_tokens=0), "max_tokens", id="max_tokens-at-least-1"),
    pytest.param(validate_chat, turn(max_tokens=MAX_TOKENS), turn(max_tokens=MAX_TOKENS + 1), "max_tokens",
                 id="max_tokens-at-most-MAX_TOKENS"),
    pytest.param(validate_chat, turn(temperature=LOWEST_TEMPERATURE), turn(temperature=math.nextafter(LOWEST_TEMPERATURE, -1)),
                 "temperature", id="temperature-at-least-the-models-lowest"),
    pytest.param(validate_chat, turn(temperature=HIGHEST_TEMPERATURE), turn(temperature=math.nextafter(HIGHEST_TEMPERATURE, 99)),
                 "temperature", id="temperature-at-most-the-models-highest"),
    pytest.param(validate_chat, chat_of(MAX_MESSAGES), chat_of(MAX_MESSAGES + 1), "messages", id="messages-at-most-MAX_MESSAGES"),
    pytest.param(validate_chat, chat_of_chars(MAX_INPUT_CHARS), chat_of_chars(MAX_INPUT_CHARS + 1), "messages",
                 id="content-at-most-MAX_INPUT_CHARS"),
    pytest.param(validate_ui_chat, ui_chat_of(MAX_MESSAGES), ui_chat_of(MAX_MESSAGES + 1), "messages",
                 id="ui-messages-at-most-MAX_MESSAGES-skipped-ones-included"),
    pytest.param(validate_ui_chat, ui_chat_making(MAX_MESSAGES), ui_chat_making(MAX_MESSAGES + 1), "messages",
                 id="ui-model-messages-at-most-MAX_MESSAGES-results-included"),
    pytest.param(validate_ui_chat, resumable_ui_chat("a" * MAX_CHAT_ID_CHARS), resumable_ui_chat("a" * (MAX_CHAT_ID_CHARS + 1)), "id",
                 id="resumable-chat-id-at-most-128-characters"),
    pytest.param(validate_ui_chat, resumable_ui_chat("a"), resumable_ui_chat(""), "id", id="resumable-chat-id-at-least-1-character"),
]


@pytest.mark.parametrize(("validate", "at_limit", "past_limit", "param"), BOUNDS)
def test_a_limit_is_accepted_and_one_past_it_refused_naming_the_field(validate: Validate, at_limit, past_limit, param):
    validate(at_limit, CONFIG)
    with pytest.raises(ApiError) as caught:
        validate(past_limit, CONFIG)
    assert (caught.value.status, caught.value.code, caught.value.param) == (400, "invalid_request", param)


def test_the_limits_reach_the_model_inputs_unchanged():
    at_limit = validate_chat(turn(max_tokens=MAX_TOKENS, temperature=HIGHEST_TEMPERATURE), CONFIG)
    assert (at_limit.max_tokens, at_limit.temperature) == (MAX_TOKENS, HIGHEST_TEMPERATURE)
    assert len(validate_chat(chat_of(MAX_MESSAGES), CONFIG).messages) == MAX_MESSAGES
    assert validate_ui_chat(resumable_ui_chat("a" * MAX_CHAT_ID_CHARS), CONFIG).chat_id == "a" * MAX_CHAT_ID_CHARS


def nested(depth: int) -> bytes:
    """JSON arrays `depth` deep, with a sibling so that the body holds more openers than levels."""
    return b"[" * depth + b"]" * (depth - 1) + b",[]]"


def test_json_bodies_nest_at_most_max_json_depth_levels():
    deepest, sibling = parse_json_body(nested(MAX_JSON_DEPTH))
    for _ in range(MAX_JSON_DEPTH - 2):
        [deepest] = deepest
    assert deepest == [] and sibling == []
    with pytest.raises(ApiError) as caught:
        parse_json_body(nested(MAX_JSON_DEPTH + 1))
    assert (caught.value.status, caught.value.code) == (400, "invalid_json")


@pytest.mark.parametrize(("length", "continued"), [(tools.MAX_ID_CHARS, True), (tools.MAX_ID_CHARS + 1, False)])
def test_a_ui_answer_continues_a_last_assistant_message_whose_id_has_at_most_256_characters(length, continued):
    result = {"type": "tool-clock", "toolCallId": "c1", "state": "output-available", "input": {}, "output": "13:00"}
    message_id = "m" * length
    payload = {"messages": [ui("user", TEXT), ui("assistant", result, id=message_id)]}
    assert validate_ui_chat(payload, CONFIG).continues_message == (message_id if continued else None)


# --- sized to the model's context window (docs/limits.md, "Sized to the model") -------------

SMALL = "@cf/meta/llama-3.1-8b-instruct-fast"  # no stated window: 8,192 tokens, 49,152 characters, 256 messages
LARGE = "@cf/zai-org/glm-4.7-flash"  # 131,072 tokens


def test_a_fallback_too_small_for_the_turn_is_skipped_and_a_turn_no_model_takes_is_refused():
    config = Config(model=LARGE, fallback_models=(SMALL,))
    small_turn = {"messages": [{"role": "user", "content": "x" * 49_152}]}
    assert validate_chat(small_turn, config).models == ()  # MODEL's order, unchanged
    large_turn = {"messages": [{"role": "user", "content": "x" * 49_153}]}
    assert validate_chat(large_turn, config).models == (LARGE,)
    assert validate_chat(large_turn, Config(model=SMALL, fallback_models=(LARGE,))).models == (LARGE,)
    many = {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}] * 128 + [{"role": "user", "content": "z"}]}
    assert validate_chat(many, Config(model=SMALL, fallback_models=(LARGE,))).models == (LARGE,)
    with pytest.raises(ApiError) as raised:
        validate_chat(large_turn, Config(model=SMALL))
    assert raised.value.param == "messages" and "49152 characters" in raised.value.message


def test_the_body_limit_is_the_largest_served_models_under_max_body_bytes():
    from chat.config import BODY_BYTES_PER_TOKEN

    assert Config(model=LARGE).body_limit == 131_072 * BODY_BYTES_PER_TOKEN
    assert Config(model=SMALL, fallback_models=(LARGE,)).body_limit == 131_072 * BODY_BYTES_PER_TOKEN
    assert Config(model=SMALL).body_limit == 8_192 * BODY_BYTES_PER_TOKEN
    assert Config(model=LARGE, max_body_bytes=1000).body_limit == 1000
    assert Config(model="@cf/unlisted/model").body_limit == 8_192 * BODY_BYTES_PER_TOKEN
