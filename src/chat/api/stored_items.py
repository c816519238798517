"""The items of stored responses, found by their ids: `item_reference` input items of
`POST /v1/responses`, and the pages of `GET /v1/responses/{id}/input_items`. Pure Python.

Every item a stored response holds has an id that names the Durable Object keeping it,
so a reference costs one call to that object and no look at any other:

    <kind>_<the object's 64 hex digits>_<n>     its output item n (the id its stream gave)
    <kind>_<the object's 64 hex digits>_i<k>    its input item k, as the response keeps it

`<kind>` says the item's type: `msg` (message), `fc` (function_call), `fco`
(function_call_output), `rs` (reasoning). An id of a response that was not stored (its
digits are the request id's 32) names no object, and is not found, as on OpenAI's API.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chat.web.errors import ApiError, invalid_request
from sse import portable_json

ITEM_PREFIXES = {"message": "msg", "function_call": "fc", "function_call_output": "fco", "reasoning": "rs"}
_ITEM_ID = re.compile(r"(msg|fc|fco|rs)_([0-9a-f]{64})_(i?)(0|[1-9][0-9]{0,3})")
# How many stored responses one request may reference: each is a call to its object, a
# subrequest of the Worker's, and the Workers Free plan allows 50 a request (Paid 10,000;
# developers.cloudflare.com/workers/platform/limits/, read 2026-12-03), which the model's
# call, its fallbacks and the rate limiter share. An agent loop references its earlier steps.
MAX_REFERENCED_RESPONSES = 32
# GET .../input_items: OpenAI's bounds and defaults on a page (openai 3.57.0's
# input_item_list_params.py: limit 1 to 100, default 20; order "asc" or "desc", default "desc").
MAX_PAGE_ITEMS = 100
DEFAULT_PAGE_ITEMS = 20
# A page ends early once it holds this many characters of JSON (at least one item).
PAGE_CHARS = 1024 * 1024


@dataclass(frozen=True, kw_only=True, slots=True)
class Reference:
    """An `item_reference` of the request: where it stands in `input`, and where its item is."""

    at: int  # its index in `input`
    key: str  # the object's id (64 hex digits)
    place: str  # "msg:3": output item 3, a message; "fc:i3": input item 3, a function_call


def is_reference(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "item_reference"


def item_not_found(item_id: Any, at: str) -> ApiError:
    """OpenAI's answer for an item it does not hold (missing, expired, not stored, or
    another client's): a 404 in its words (seen in vercel/ai#10290, 2025-11), naming `at`."""
    shown = item_id if isinstance(item_id, str) and len(item_id) <= 100 and item_id.isascii() and item_id.isprintable() else "…"
    return ApiError("item_not_found", f"Item with id '{shown}' not found ({at}). Items are kept only by responses stored "
                    "(store not false) until they expire; send the item itself instead.", param=at)


def references(items: list[Any], max_items: int) -> list[Reference]:
    """The item references among `items` (a request's `input`), in order. Raises ApiError:
    `item_not_found` for an id that cannot name a stored item, 400 for a malformed one,
    more than `max_items` (what input may hold: each would bring an item) or more responses
    referenced than MAX_REFERENCED_RESPONSES."""
    count = sum(1 for item in items if is_reference(item))
    if count > max_items:
        raise invalid_request(f"input: {count} item references; input may hold at most {max_items} items.", param="input")
    found: list[Reference] = []
    for index, item in enumerate(items):
        if not is_reference(item):
            continue
        at = f"input[{index}]"
        item_id = item.get("id")
        if not isinstance(item_id, str):
            raise invalid_request(f"{at}.id: an item reference needs the id of an item, a string.", param=f"{at}.id")
        matched = _ITEM_ID.fullmatch(item_id)
        if matched is None:
            raise item_not_found(item_id, at)
        kind, key, input_mark, number = matched.groups()
        found.append(Reference(at=index, key=key, place=f"{kind}:{input_mark}{number}"))
    if len({reference.key for reference in found}) > MAX_REFERENCED_RESPONSES:
        raise invalid_request(f"input: item references to more than {MAX_REFERENCED_RESPONSES} stored responses in one request; "
                              "send the items themselves, or continue with previous_response_id.", param="input")
    return found


def by_object(found: list[Reference]) -> dict[str, list[Reference]]:
    """The references grouped by the object that keeps their items, in order of first use."""
    grouped: dict[str, list[Reference]] = {}
    for reference in found:
        grouped.setdefault(reference.key, []).append(reference)
    return grouped


def resolved(items: list[Any], found: Mapping[int, Any]) -> list[Any]:
    """`items` with the reference at each index of `found` replaced by its item."""
    return [found.get(index, item) if is_reference(item) else item for index, item in enumerate(items)]


# --- what an object answers ------------------------------------------------------------------


def stored_item(place: Any, *, key: str, inputs: list[Any], output: list[Any]) -> dict[str, Any] | None:
    """The item at `place` ("msg:3", "fc:i3") of a stored response whose object is `key`,
    with its id; None when it has no such item, or one of another kind (an id never issued)."""
    matched = re.fullmatch(r"(msg|fc|fco|rs):(i?)(0|[1-9][0-9]{0,3})", place) if isinstance(place, str) else None
    if matched is None:
        return None
    kind, index = matched[1], int(matched[3])
    if matched[2]:
        item = listed_input(inputs[index], key, index) if index < len(inputs) else None
    else:
        item = output[index] if index < len(output) and isinstance(output[index], dict) else None
    return item if item is not None and ITEM_PREFIXES.get(item.get("type", "message")) == kind else None


def listed_input(item: Mapping[str, Any], key: str, index: int) -> dict[str, Any]:
    """Input item `index` of a stored response as kept (chat.api.responses), in the shape
    OpenAI lists it: with its id and status, a message's text as a part."""
    return listed(item, f"{ITEM_PREFIXES.get(item.get('type', 'message'), 'msg')}_{key}_i{index}")


def listed(item: Mapping[str, Any], item_id: str) -> dict[str, Any]:
    """An item as kept, with the id `item_id`, in the shape OpenAI lists it."""
    kind = item.get("type", "message")
    listed = {**item, "id": item_id, "type": kind, "status": "completed"}
    if kind == "message" and isinstance(item.get("content"), str):
        part = "output_text" if item.get("role") == "assistant" else "input_text"
        listed["content"] = [{"type": part, "text": item["content"]}]
    return listed


@dataclass(frozen=True, kw_only=True, slots=True)
class PageQuery:
    """A checked `?after=&limit=&order=` of a list of items."""

    after: str | None = None
    limit: int = DEFAULT_PAGE_ITEMS
    order: str = "desc"

    @staticmethod
    def of(query: Mapping[str, str]) -> PageQuery:
        """Raises ApiError 400 naming the parameter."""
        limit = query.get("limit", str(DEFAULT_PAGE_ITEMS))
        if not (limit.isascii() and limit.isdigit() and len(limit) <= 3 and 1 <= int(limit) <= MAX_PAGE_ITEMS):
            raise invalid_request(f"limit must be a whole number from 1 to {MAX_PAGE_ITEMS}.", param="limit")
        order = query.get("order", "desc")
        if order not in ("asc", "desc"):
            raise invalid_request('order must be "asc" or "desc".', param="order")
        after = query.get("after")
        if after is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,128}", after):
            raise invalid_request("after must be the id of an item of this list.", param="after")
        return PageQuery(after=after or None, limit=int(limit), order=order)

    def as_order(self) -> list[Any]:
        return [self.after, self.limit, self.order]

    @staticmethod
    def from_order(order: Any) -> PageQuery:
        """Raises ValueError for a message the Worker would never send."""
        after, limit, kind = order
        if not (after is None or isinstance(after, str)) or type(limit) is not int or kind not in ("asc", "desc"):
            raise ValueError("page")
        return PageQuery(after=after, limit=limit, order=kind)


def page(items: list[dict[str, Any]], query: PageQuery) -> dict[str, Any]:
    """One page of `items` (each with its id, oldest first) in OpenAI's list shape. Raises
    ApiError 400 naming `after` when it is no item's id."""
    ordered = items if query.order == "asc" else items[::-1]
    start = 0
    if query.after is not None:
        ids = [item.get("id") for item in ordered]
        if query.after not in ids:
            raise invalid_request("after: no item of this list has that id.", param="after")
        start = ids.index(query.after) + 1
    return listed_page(ordered[start : start + query.limit], more=start + query.limit < len(ordered))


def listed_page(items: Iterable[dict[str, Any]], *, more: bool) -> dict[str, Any]:
    """A page of `items` in OpenAI's list shape, ending early once it holds PAGE_CHARS of
    JSON (with at least one item; `items` is read no further): a page of a hundred items
    with images would be tens of megabytes. The SDKs page on from its last id."""
    data: list[dict[str, Any]] = []
    chars = 0
    for item in items:
        if data and chars >= PAGE_CHARS:
            more = True
            break
        data.append(item)
        chars += len(portable_json(item))
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": more}
