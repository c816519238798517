"""Item ids, item references and input item pages of stored responses (chat.api.stored_items)
on CPython: which ids name a stored item, how references are grouped by the object that
keeps them, what an object answers for each place, and OpenAI's paging."""

from __future__ import annotations

import pytest

from chat.api.stored_items import (
    MAX_REFERENCED_RESPONSES,
    PageQuery,
    Reference,
    by_object,
    listed_input,
    page,
    references,
    resolved,
    stored_item,
)
from chat.web.errors import ApiError

KEY = "ab" * 32
OTHER = "cd" * 32


def ref(item_id: object) -> dict[str, object]:
    return {"type": "item_reference", "id": item_id}


def test_references_name_their_object_and_place_and_are_grouped_by_object():
    items = [{"role": "user", "content": "hi"}, ref(f"rs_{KEY}_0"), ref(f"msg_{OTHER}_i3"), ref(f"fc_{KEY}_12"), ref(f"fco_{KEY}_i0")]
    found = references(items, 1000)
    assert found == [Reference(at=1, key=KEY, place="rs:0"), Reference(at=2, key=OTHER, place="msg:i3"),
                     Reference(at=3, key=KEY, place="fc:12"), Reference(at=4, key=KEY, place="fco:i0")]
    assert list(by_object(found)) == [KEY, OTHER] and [r.at for r in by_object(found)[KEY]] == [1, 3, 4]
    assert references([{"role": "user", "content": "hi"}], 1000) == []


@pytest.mark.parametrize("item_id", [
    pytest.param("rs_" + "ab" * 16 + "_0", id="a response that was not stored (the request id's 32 digits)"),
    pytest.param(f"msg_{KEY.upper()}_0", id="upper-case digits"),
    pytest.param(f"xyz_{KEY}_0", id="an unknown kind"),
    pytest.param(f"msg_{KEY}_01", id="a leading zero"),
    pytest.param(f"msg_{KEY}_12345", id="past any item a response may hold"),
    pytest.param(f"msg_{KEY}_", id="no place"),
    pytest.param(f"resp_{KEY}", id="a response's id"),
    pytest.param("", id="empty"),
    pytest.param("\u2028" * 300, id="strange and long"),
])
def test_an_id_that_cannot_name_a_stored_item_is_not_found_naming_its_place(item_id):
    with pytest.raises(ApiError) as raised:
        references([{"role": "user", "content": "hi"}, ref(item_id)], 1000)
    error = raised.value
    assert (error.code, error.status, error.param) == ("item_not_found", 404, "input[1]")
    assert "\u2028" not in error.message and len(error.message) < 400


@pytest.mark.parametrize("item_id", [None, 5, ["x"], {"id": "x"}])
def test_a_reference_without_a_string_id_is_a_400_naming_it(item_id):
    with pytest.raises(ApiError) as raised:
        references([ref(item_id)], 1000)
    assert (raised.value.code, raised.value.param) == ("invalid_request", "input[0].id")


def test_references_to_more_responses_than_the_bound_are_refused():
    keys = [f"{n:064x}" for n in range(MAX_REFERENCED_RESPONSES + 1)]
    assert len(by_object(references([ref(f"msg_{key}_0") for key in keys[:-1]], 1000))) == MAX_REFERENCED_RESPONSES
    with pytest.raises(ApiError) as raised:
        references([ref(f"msg_{key}_0") for key in keys], 1000)
    assert raised.value.param == "input"


def test_more_references_than_input_may_hold_are_refused_before_any_is_looked_up():
    # Each would bring an item: a body of 20,000 references to one large item was the attack.
    assert len(references([ref(f"msg_{KEY}_i0")] * 1000, 1000)) == 1000
    with pytest.raises(ApiError) as raised:
        references([ref(f"msg_{KEY}_i0")] * 1001, 1000)
    assert raised.value.param == "input" and "1001" in raised.value.message


def test_a_resolved_reference_is_replaced_by_its_item_in_place():
    items = [{"role": "user", "content": "hi"}, ref(f"msg_{KEY}_0"), {"role": "user", "content": "more"}]
    item = {"id": f"msg_{KEY}_0", "type": "message", "role": "assistant", "content": []}
    assert resolved(items, {1: item}) == [items[0], item, items[2]]


def test_an_object_answers_its_output_and_input_items_with_their_ids_and_none_elsewhere():
    output = [{"id": f"rs_{KEY}_0", "type": "reasoning"}, {"id": f"msg_{KEY}_1", "type": "message"}]
    inputs = [{"type": "message", "role": "user", "content": "hi"},
              {"type": "function_call", "call_id": "c1", "name": "now", "arguments": "{}"},
              {"type": "function_call_output", "call_id": "c1", "output": "12:00"},
              {"type": "message", "role": "assistant", "content": "Noon."}]
    assert stored_item("msg:1", key=KEY, inputs=inputs, output=output) == output[1]
    assert stored_item("msg:i0", key=KEY, inputs=inputs, output=output) == {
        "id": f"msg_{KEY}_i0", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}], "status": "completed"}
    assert stored_item("fc:i1", key=KEY, inputs=inputs, output=output)["id"] == f"fc_{KEY}_i1"
    assert stored_item("fco:i2", key=KEY, inputs=inputs, output=output)["id"] == f"fco_{KEY}_i2"
    assert stored_item("msg:i3", key=KEY, inputs=inputs, output=output)["content"] == [{"type": "output_text", "text": "Noon."}]
    for place in ("msg:2", "msg:i4", "x", "msg:-1", "msg:i", "", None, 3, "1", "i0"):
        assert stored_item(place, key=KEY, inputs=inputs, output=output) is None
    # An id of another kind than its item's was never issued (the attack on issue 40).
    for place in ("rs:i0", "fc:1", "msg:0", "msg:i1", "fc:i2", "fco:i1"):
        assert stored_item(place, key=KEY, inputs=inputs, output=output) is None, place


ITEMS = [listed_input({"type": "message", "role": "user", "content": str(n)}, KEY, n) for n in range(5)]


def ids(listed):
    return [item["id"][-2:] for item in listed["data"]]


def test_pages_follow_openais_list_shape_newest_first_by_default():
    first = page(ITEMS, PageQuery.of({}))
    assert first["object"] == "list" and ids(first) == ["i4", "i3", "i2", "i1", "i0"] and first["has_more"] is False
    assert (first["first_id"], first["last_id"]) == (ITEMS[4]["id"], ITEMS[0]["id"])
    walked, after = [], None
    while True:
        listed = page(ITEMS, PageQuery.of({"order": "asc", "limit": "2", **({"after": after} if after else {})}))
        walked += ids(listed)
        if not listed["has_more"]:
            break
        after = listed["last_id"]
    assert walked == ["i0", "i1", "i2", "i3", "i4"]
    empty = page([], PageQuery())
    assert empty == {"object": "list", "data": [], "first_id": None, "last_id": None, "has_more": False}
    assert page(ITEMS, PageQuery.of({"after": ITEMS[0]["id"]}))["data"] == []


def test_a_page_ends_early_once_it_holds_a_megabyte_of_json_and_says_there_is_more():
    big = [listed_input({"type": "message", "role": "user", "content": "x" * 400_000}, KEY, n) for n in range(5)]
    listed = page(big, PageQuery.of({"order": "asc", "limit": "100"}))
    assert len(listed["data"]) == 3 and listed["has_more"] and listed["last_id"] == big[2]["id"]
    huge = [listed_input({"type": "message", "role": "user", "content": "x" * 3_000_000}, KEY, 0)]
    assert page(huge, PageQuery())["data"] == huge, "one item however large: a page is never empty while items remain"


@pytest.mark.parametrize(("query", "param"), [
    ({"limit": "0"}, "limit"), ({"limit": "101"}, "limit"), ({"limit": "1e2"}, "limit"), ({"limit": "-1"}, "limit"),
    ({"limit": "9" * 400}, "limit"), ({"order": "newest"}, "order"), ({"after": "x" * 129}, "after"),
    ({"after": "a%20b"}, "after"),
])
def test_a_bad_page_query_is_a_400_naming_the_parameter(query, param):
    with pytest.raises(ApiError) as raised:
        PageQuery.of(query)
    assert (raised.value.code, raised.value.param) == ("invalid_request", param)


def test_an_after_that_is_no_items_id_is_a_400_naming_it():
    with pytest.raises(ApiError) as raised:
        page(ITEMS, PageQuery.of({"after": f"msg_{OTHER}_i0"}))
    assert raised.value.param == "after"


def test_a_page_query_travels_to_the_object_and_back_and_a_malformed_one_is_refused():
    query = PageQuery.of({"after": "msg_x", "limit": "7", "order": "asc"})
    assert PageQuery.from_order(query.as_order()) == query
    for bad in ([None, "7", "asc"], [None, 7, "up"], [3, 7, "asc"]):
        with pytest.raises(ValueError):
            PageQuery.from_order(bad)
