"""Fuzz the request validator: whatever arrives, only ApiError (a 4xx) comes out."""

from __future__ import annotations

import json
import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat.api.validation import parse_json_body, validate_chat, validate_ui_chat
from chat.config import Config
from chat.web.errors import ApiError

CONFIG = Config(model="@cf/zai-org/glm-4.7-flash")
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.sampled_from(["role", "content", "parts", "type", "text", "messages", "max_tokens", "temperature"]) | st.text(max_size=5), inner, max_size=5),
    max_leaves=30,
)
message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "tool", 1, None]), "content": json_values})
ui_message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]), "parts": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["text", "file", "step-start"]), "text": json_values}), max_size=3)})
turns = st.fixed_dictionaries({"messages": st.lists(message, max_size=6) | json_values}, optional={"max_tokens": json_values, "temperature": json_values})
ui_turns = st.fixed_dictionaries({"messages": st.lists(ui_message, max_size=6) | json_values})


def only_api_errors(call) -> None:
    try:
        call()
    except ApiError as error:
        assert 400 <= error.status < 500 and error.code in ("invalid_json", "invalid_request")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=turns | json_values)
def test_any_json_payload_is_accepted_or_refused_with_a_400(payload):
    only_api_errors(lambda: validate_chat(payload, CONFIG))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=ui_turns | json_values)
def test_any_ui_chat_payload_is_accepted_or_refused_with_a_400(payload):
    only_api_errors(lambda: validate_ui_chat(payload, CONFIG))


@settings(max_examples=400, deadline=None)
@given(body=st.binary(max_size=300) | turns.map(lambda t: json.dumps(t, allow_nan=True).encode()))
def test_any_body_bytes_parse_or_fail_as_invalid_json(body):
    only_api_errors(lambda: validate_chat(parse_json_body(body), CONFIG))


def test_validating_many_requests_keeps_memory_bounded():
    payload = {"messages": [{"role": "user", "content": "x" * 1000}] * 10}
    tracemalloc.start()
    for _ in range(200):
        validate_chat(payload, CONFIG)
    baseline = tracemalloc.get_traced_memory()[0]
    for _ in range(2000):
        validate_chat(payload, CONFIG)
    grown = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    assert grown < 64 * 1024
