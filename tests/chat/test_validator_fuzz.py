"""Fuzz the request validator: a valid turn is accepted as sent, a turn broken in one known
way is refused naming what broke it, and whatever else arrives, only ApiError (a 4xx)
comes out."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat.api.validation import WHITESPACE, parse_json_body, validate_chat, validate_ui_chat
from chat.config import Config
from chat.model import catalog
from chat.web.errors import ApiError

CONFIG = Config(model="@cf/zai-org/glm-4.7-flash")
LOWEST_TEMPERATURE, HIGHEST_TEMPERATURE = catalog.sampling_range(CONFIG.model, "temperature")
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.sampled_from(["role", "content", "parts", "type", "text", "messages", "max_tokens", "temperature"]) | st.text(max_size=5), inner, max_size=5),
    max_leaves=30,
)
message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "tool", 1, None]), "content": json_values})
ui_message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]), "parts": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "file", "step-start"]), "text": json_values}), max_size=3)})
turns = st.fixed_dictionaries({"messages": st.lists(message, max_size=6) | json_values}, optional={"max_tokens": json_values, "temperature": json_values})
ui_turns = st.fixed_dictionaries({"messages": st.lists(ui_message, max_size=6) | json_values})

# --- what is valid ------------------------------------------------------------------------

BLANK = st.text(alphabet=WHITESPACE, max_size=4)
CONTENT = st.text(min_size=1, max_size=30).filter(lambda text: text.strip(WHITESPACE))
not_a_non_empty_list = st.just([]) | st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)


def alternating(users: st.SearchStrategy[dict[str, Any]], assistants: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Up to five exchanges, then the user's turn."""
    exchanges = st.lists(st.tuples(users, assistants), max_size=5)
    return st.tuples(exchanges, users).map(lambda drawn: [m for exchange in drawn[0] for m in exchange] + [drawn[1]])


settings_fields = {
    "max_tokens": st.none() | st.integers(1, CONFIG.max_tokens),
    "temperature": st.none() | st.floats(LOWEST_TEMPERATURE, HIGHEST_TEMPERATURE) | st.integers(int(LOWEST_TEMPERATURE), int(HIGHEST_TEMPERATURE)),
}
valid_turns = st.fixed_dictionaries(
    {"messages": alternating(st.builds(lambda c: {"role": "user", "content": c}, CONTENT),
                             st.builds(lambda c: {"role": "assistant", "content": c}, st.none() | st.text(max_size=30)))},
    optional={**settings_fields, "resumable": st.none() | st.booleans()},
)
text_part = st.builds(lambda text: {"type": "text", "text": text}, st.text(max_size=30))
# Parts the model call leaves out. A file part is not one of them: it is an image, or a 400
# naming it (issue 30; tests/chat/test_images.py).
other_part = st.sampled_from([{"type": "step-start"}, {"type": "reasoning", "text": "hm"}])
valid_ui_turns = st.fixed_dictionaries(
    {"messages": alternating(
        st.builds(lambda before, text, after: {"role": "user", "parts": [*before, {"type": "text", "text": text}, *after]},
                  st.lists(text_part | other_part, max_size=2), CONTENT, st.lists(text_part | other_part, max_size=2)),
        st.builds(lambda parts: {"role": "assistant", "parts": parts}, st.lists(text_part | other_part, max_size=4)),
    )},
    optional=settings_fields,
)


def ui_model_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """What the model reads of UI messages without tools: a user's text parts joined; an
    assistant's text of each step (steps start at step-start parts), when not blank."""
    plain = []
    for message in messages:
        steps: list[list[str]] = [[]]
        for part in message["parts"]:
            if part["type"] == "step-start" and message["role"] == "assistant":
                steps.append([])
            elif part["type"] == "text":
                steps[-1].append(part["text"])
        texts = ["".join(step) for step in steps]
        plain += [{"role": message["role"], "content": text} for text in texts if message["role"] == "user" or text.strip(WHITESPACE)]
    return plain


def assert_settings_kept(turn, payload: dict[str, Any]) -> None:
    assert turn.max_tokens == (payload.get("max_tokens") or CONFIG.max_tokens)
    temperature = payload.get("temperature")
    assert turn.temperature == (None if temperature is None else float(temperature))


@PROPERTY
@given(payload=valid_turns)
def test_a_valid_turn_is_accepted_as_sent(payload):
    turn = validate_chat(payload, CONFIG)
    assert list(turn.messages) == [{"role": m["role"], "content": m["content"] or ""} for m in payload["messages"]]
    assert_settings_kept(turn, payload)
    assert turn.resumable is bool(payload.get("resumable"))


@PROPERTY
@given(payload=valid_ui_turns)
def test_a_valid_ui_turn_is_accepted_as_sent(payload):
    turn = validate_ui_chat(payload, CONFIG)
    assert list(turn.messages) == ui_model_messages(payload["messages"])
    assert_settings_kept(turn, payload)


# --- what is broken in one known way --------------------------------------------------------

out_of_range_max_tokens = (st.integers(max_value=0) | st.integers(min_value=CONFIG.max_tokens + 1)
                           | st.floats(allow_nan=True) | st.booleans() | st.text(max_size=5) | st.lists(st.integers(), max_size=2))
out_of_range_temperature = (st.floats(allow_nan=True).filter(lambda t: not LOWEST_TEMPERATURE <= t <= HIGHEST_TEMPERATURE)
                            | st.integers().filter(lambda t: not LOWEST_TEMPERATURE <= t <= HIGHEST_TEMPERATURE)
                            | st.booleans() | st.text(max_size=5) | st.lists(st.integers(), max_size=2))


@st.composite
def broken_turns(draw, valid: st.SearchStrategy[dict[str, Any]], ui: bool) -> tuple[Any, str | None, str]:
    """A valid turn broken in one way: (payload, the param its refusal names (None: none),
    words of its message)."""
    payload = draw(valid)
    messages = payload["messages"]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    way = draw(st.sampled_from(["role", "content", "blank", "last", "many", "long", "messages", "max_tokens", "temperature", "payload",
                                *(["parts", "resumable"] if ui else ["resumable"])]))
    if way == "role":
        at = draw(st.sampled_from(range(len(messages))))
        messages[at]["role"] = draw(st.sampled_from(["system", "robot", "", None, 1, "User"] + (["tool"] if ui else [])))
        return payload, f"messages[{at}].role", "role"
    if way == "content":
        at = draw(st.sampled_from(users))
        if ui:
            messages[at]["parts"] = [{"type": "text", "text": draw(st.integers() | st.none() | st.lists(st.text(max_size=2), max_size=2))}]
            return payload, None, f"messages[{at}].parts"
        messages[at]["content"] = draw(st.integers() | st.none() | st.lists(st.text(max_size=2), max_size=2) | st.booleans())
        return payload, f"messages[{at}].content", "content"
    if way == "blank":
        at = len(messages) - 1  # on /api/ui-chat a blank assistant step is left out, a blank user message is not
        if ui:
            messages[at]["parts"] = [{"type": "text", "text": draw(BLANK)}]
        else:
            messages[at]["content"] = draw(BLANK)
        return payload, f"messages[{at}].content", "content"
    if way == "last":
        messages.append({"role": "assistant", "parts": [{"type": "text", "text": "x"}]} if ui else {"role": "assistant", "content": "x"})
        # On /api/ui-chat an assistant message may end a turn when its tools answered; this one has none.
        return payload, "messages", "last message"
    if way == "many":
        payload["messages"] = [messages[-1]] * draw(st.integers(CONFIG.max_messages + 1, CONFIG.max_messages + 20))
        return payload, "messages", f"at most {CONFIG.max_messages}"
    if way == "long":
        long_text = "x" * (CONFIG.max_input_chars + 1)
        if ui:
            messages[-1]["parts"] = [{"type": "text", "text": long_text}]
        else:
            messages[-1]["content"] = long_text
        return payload, "messages", f"at most {CONFIG.max_input_chars}"
    if way == "messages":
        payload["messages"] = draw(not_a_non_empty_list)
        return payload, "messages", "messages must be a non-empty list"
    if way == "max_tokens":
        payload["max_tokens"] = draw(out_of_range_max_tokens)
        return payload, "max_tokens", "max_tokens"
    if way == "temperature":
        payload["temperature"] = draw(out_of_range_temperature)
        return payload, "temperature", "temperature"
    if way == "payload":
        return draw(st.none() | st.integers() | st.text(max_size=5) | st.lists(st.integers(), max_size=2)), None, "JSON object"
    if way == "parts":
        at = draw(st.sampled_from(range(len(messages))))
        messages[at]["parts"] = draw(st.none() | st.text(max_size=3) | st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
        return payload, f"messages[{at}]", "list of parts"
    # resumable
    if ui:
        payload["resumable"] = True  # without the chat id it is kept under
        return payload, "id", "chat id"
    payload["resumable"] = draw(st.integers() | st.text(max_size=3) | st.lists(st.booleans(), max_size=2))
    return payload, "resumable", "resumable"


def assert_refused(validate, payload: Any, param: str | None, words: str) -> None:
    with pytest.raises(ApiError) as caught:
        validate(payload, CONFIG)
    error = caught.value
    assert (error.status, error.code, error.param) == (400, "invalid_request", param), error.message
    assert words in error.message


@PROPERTY
@given(case=broken_turns(valid_turns, ui=False))
def test_a_turn_broken_in_one_way_is_refused_naming_what_broke_it(case):
    assert_refused(validate_chat, *case)


@PROPERTY
@given(case=broken_turns(valid_ui_turns, ui=True))
def test_a_ui_turn_broken_in_one_way_is_refused_naming_what_broke_it(case):
    assert_refused(validate_ui_chat, *case)


@PROPERTY
@given(payload=valid_turns, data=st.data())
def test_a_valid_body_is_accepted_and_the_same_body_cut_short_or_not_utf8_is_invalid_json(payload, data):
    body = json.dumps(payload).encode()
    assert validate_chat(parse_json_body(body), CONFIG) == validate_chat(payload, CONFIG)
    cut = data.draw(st.integers(0, len(body) - 1))
    for broken in (body[:cut], body[:cut] + b"\xff" + body[cut:]):
        with pytest.raises(ApiError) as caught:
            parse_json_body(broken)
        assert (caught.value.status, caught.value.code) == (400, "invalid_json")


# --- whatever arrives -------------------------------------------------------------------------


def only_api_errors(call) -> None:
    try:
        call()
    except ApiError as error:
        assert 400 <= error.status < 500 and error.code in ("invalid_json", "invalid_request")


@FUZZ
@given(payload=turns | json_values)
def test_any_json_payload_is_accepted_or_refused_with_a_400(payload):
    only_api_errors(lambda: validate_chat(payload, CONFIG))


@FUZZ
@given(payload=ui_turns | json_values)
def test_any_ui_chat_payload_is_accepted_or_refused_with_a_400(payload):
    only_api_errors(lambda: validate_ui_chat(payload, CONFIG))


@settings(max_examples=400, deadline=None)
@given(body=st.binary(max_size=300) | turns.map(lambda t: json.dumps(t, allow_nan=True).encode()))
def test_any_body_bytes_parse_or_fail_as_invalid_json(body):
    only_api_errors(lambda: validate_chat(parse_json_body(body), CONFIG))


def memory_grown_over_many_validations() -> int:
    payload = {"messages": [{"role": "user", "content": "x" * 1000}] * 10}
    tracemalloc.start()
    for _ in range(200):
        validate_chat(payload, CONFIG)
    baseline = tracemalloc.get_traced_memory()[0]
    for _ in range(2000):
        validate_chat(payload, CONFIG)
    grown = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    return grown


def test_validating_many_requests_keeps_memory_bounded():
    from tests.sse.support import measured_alone

    assert measured_alone("tests.chat.test_validator_fuzz", "memory_grown_over_many_validations") < 64 * 1024
