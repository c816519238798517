"""The Conversations API's request checks and ids (chat.api.conversations) on CPython, and
the routes with an item's id in their path (chat.web.routes)."""

from __future__ import annotations

import pytest

from chat.api.conversations import (
    MAX_ITEMS_PER_REQUEST,
    checked_conversation,
    checked_items,
    checked_update,
    conversation_key,
    conversation_param,
    is_of_kind,
    item_id,
    item_kind,
    item_number,
    listed_item,
)
from chat.api.responses import named_for_history
from chat.config import Config
from chat.web.errors import ApiError
from chat.web.routes import match

CONFIG = Config(model="@cf/zai-org/glm-4.7-flash")
KEY = "ab" * 32


def test_items_are_kept_as_a_stored_response_keeps_its_input():
    kept = checked_items([{"role": "user", "content": "hi"},
                          {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo", "annotations": []}],
                           "id": "msg_theirs", "status": "completed"},
                          {"type": "function_call", "call_id": "c1", "name": "now", "arguments": "{}", "id": "fc_theirs"},
                          {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "noon"}]},
                          {"type": "reasoning", "id": "rs_theirs", "summary": [{"type": "summary_text", "text": "hm"}], "encrypted_content": "x"},
                          {"role": "system", "content": "   "}], CONFIG)
    assert kept == [{"type": "message", "role": "user", "content": "hi"},
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "yo"}]},
                    {"type": "function_call", "call_id": "c1", "name": "now", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "c1", "output": "noon"},
                    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hm"}], "content": []}]


@pytest.mark.parametrize(("items", "param"), [
    pytest.param([], "items", id="none"),
    pytest.param({"role": "user"}, "items", id="not-a-list"),
    pytest.param([{"role": "user", "content": "x"}] * (MAX_ITEMS_PER_REQUEST + 1), "items", id="more-than-twenty"),
    pytest.param([5], "items[0]", id="not-an-object"),
    pytest.param([{"type": "item_reference", "id": "x"}], "items[0].type", id="a-reference"),
    pytest.param([{"type": "web_search_call"}], "items[0].type", id="a-hosted-call"),
    pytest.param([{"role": "robot", "content": "x"}], "items[0].role", id="a-robot"),
    pytest.param([{"role": "user", "content": [{"type": "input_file"}]}], "items[0].content[0]", id="a-file"),
    pytest.param([{"type": "function_call", "call_id": "c", "name": "n", "arguments": 5}], "items[0].arguments", id="arguments-not-text"),
    pytest.param([{"type": "function_call_output", "call_id": "c", "output": 5}], "items[0].output", id="output-not-text"),
    pytest.param([{"type": "reasoning", "content": "x"}], "items[0].content", id="reasoning-not-parts"),
])
def test_a_bad_item_is_a_400_naming_it(items, param):
    with pytest.raises(ApiError) as raised:
        checked_items(items, CONFIG)
    assert (raised.value.code, raised.value.param) == ("invalid_request", param)


def test_a_new_conversation_may_have_nothing_and_an_update_needs_metadata():
    empty = checked_conversation({}, CONFIG)
    assert (empty.items, empty.metadata) == ([], {})
    assert checked_conversation({"metadata": {"k": "v"}, "items": None}, CONFIG).metadata == {"k": "v"}
    assert checked_update({"metadata": None}) == {} and checked_update({"metadata": {"a": "b"}}) == {"a": "b"}
    for payload in ({}, [], {"metadata": {"k": 5}}, {"metadata": {str(n): "v" for n in range(17)}}):
        with pytest.raises(ApiError):
            checked_update(payload)
    with pytest.raises(ApiError):
        checked_conversation([], CONFIG)


def test_ids_name_the_conversation_and_the_items_number_in_it():
    assert conversation_key("conv_" + KEY) == KEY
    for value in ("conv_" + KEY.upper(), "conv_" + KEY[:-1], "resp_" + KEY, None, 5):
        assert conversation_key(value) is None
    message = item_id({"type": "message"}, KEY, 7)
    assert message == f"msg_{KEY}_c7" and item_number(message, KEY) == 7
    assert item_number(message, "cd" * 32) is None, "another conversation's"
    assert item_number(f"msg_{KEY}_7", KEY) is None, "a stored response's output item"
    assert item_number(f"msg_{KEY}_c07", KEY) is None and item_number(f"msg_{KEY}_c" + "9" * 17, KEY) is None
    assert listed_item({"type": "function_call_output", "call_id": "c", "output": "x"}, KEY, 2)["id"] == f"fco_{KEY}_c2"


def test_an_items_kind_is_checked_against_its_id():
    assert is_of_kind({"type": "function_call"}, item_kind(f"fc_{KEY}_c3"))
    assert not is_of_kind({"type": "message"}, item_kind(f"fc_{KEY}_c3")), "an id never issued"
    assert is_of_kind({"role": "user", "content": "x"}, "msg")


def test_a_refusal_of_an_item_a_conversation_or_a_previous_response_brought_names_that_field():
    refused = ApiError("invalid_request", "input[1].content[4]: too many images.", param="input[1].content[4]")
    assert named_for_history(refused, "conversation", 2).param == "conversation"
    own = named_for_history(refused, "previous_response_id", 1)
    assert (own.param, own.message) == ("input[0].content[4]", "input[0].content[4]: too many images."), "the client's own, as it sent it"
    whole = ApiError("invalid_request", "input is too large.", param="input")
    assert named_for_history(whole, "conversation", 5) is whole


def test_the_conversation_of_a_response_is_its_id_or_an_object_with_it():
    assert conversation_param("conv_" + KEY) == KEY == conversation_param({"id": "conv_" + KEY})
    for value, code in ((5, "invalid_request"), ({"id": 5}, "invalid_request"), ("conv_x", "conversation_not_found"),
                        ({"id": "resp_" + KEY}, "conversation_not_found")):
        with pytest.raises(ApiError) as raised:
            conversation_param(value)
        assert raised.value.code == code


@pytest.mark.parametrize(("path", "name", "key", "item"), [
    ("/v1/conversations", "openai-conversations", None, None),
    ("/v1/conversations/c1", "openai-conversation", "c1", None),
    ("/v1/conversations/c1/items", "openai-conversation-items", "c1", None),
    ("/v1/conversations/c1/items/i1", "openai-conversation-item", "c1", "i1"),
    ("/v1/conversations/c1/items/i1/x", None, None, None),
    ("/v1/conversations/c1/other", None, None, None),
    ("/v1/responses/r1/input_items", "openai-response-input-items", "r1", None),
])
def test_a_path_with_two_ids_matches_its_route_with_both(path, name, key, item):
    found = match(path)
    assert (found.route.name, found.key, found.item) == (name, key, item) if name else found is None
