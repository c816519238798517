"""Conversations of /v1/conversations: a Durable Object, one per conversation, that keeps
its items in SQLite for CONVERSATION_TTL_S after its last change (docs/openai.md,
"Conversations").

The Worker checks every request (chat.api.conversations) and reaches the object only by
RPC, each call with its owner; the object answers a JS Response: JSON, a 204, or a
Failure (chat.resumable.protocol) that the Worker raises as its ApiError. A stored
response of the conversation (chat.resumable) appends its input and output here before
its terminal event reaches a reader, so the next turn finds them.

Items are numbered from 0 in the order they were added, and an item's JSON is kept in
parts of at most PART_CHARS (a row holds at most 2 MB; an item with images can be larger).
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from workers import DurableObject

from chat.api.conversations import (
    CONVERSATION_PREFIX,
    MAX_CONVERSATION_ITEMS,
    conversation_not_found,
    conversation_object,
    is_of_kind,
    item_kind,
    item_number,
    listed_item,
)
from chat.api.stored_items import PageQuery, listed_page
from chat.logs import log
from chat.platform import ffi
from chat.platform.edge import read_config
from chat.resumable.protocol import Failure, MalformedOrder, parsed
from chat.web.errors import ApiError, invalid_request
from sse import portable_json

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS conversation (one INTEGER PRIMARY KEY CHECK (one = 1), created_at INTEGER NOT NULL,"
    " metadata TEXT NOT NULL, owner TEXT NOT NULL, next_number INTEGER NOT NULL, items INTEGER NOT NULL, chars INTEGER NOT NULL,"
    " expires_at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS items (number INTEGER NOT NULL, part INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (number, part))",
)
PART_CHARS = 400_000  # 4 bytes each at most in UTF-8: under the 2 MB a row may take
# What a conversation may hold, as the JSON of its items: each of its responses is sent it whole.
MAX_CONVERSATION_CHARS = 64 * 1024 * 1024
JSON = {"content-type": "application/json"}


class Conversation(DurableObject):
    def __init__(self, ctx: Any, env: Any) -> None:
        super().__init__(ctx, env)
        self._sql = ctx.storage.sql

    # --- the Worker's calls (RPC) ---------------------------------------------------------

    async def create(self, owner: Any, order: Any) -> Any:
        """A new conversation: `order` is JSON {"created_at", "metadata", "items"}."""
        return await self._answering(lambda: self._create(_text(owner), parsed(order)))

    async def describe(self, owner: Any) -> Any:
        return await self._answering(lambda: self._owned(owner, self._object))

    async def update(self, owner: Any, metadata: Any) -> Any:
        return await self._answering(lambda: self._owned(owner, lambda row: self._update(row, parsed(metadata))))

    async def remove(self, owner: Any) -> Any:
        return await self._answering(lambda: self._owned(owner, self._remove))

    async def add_items(self, owner: Any, items: Any) -> Any:
        """Items a client adds (checked by the Worker): the list of them, with their ids."""
        return await self._answering(lambda: self._owned(owner, lambda row: self._add(row, parsed(items), capped=True)))

    async def append_turn(self, owner: Any, items: Any) -> Any:
        """A response's input and output (chat.resumable): 204."""
        return await self._answering(lambda: self._owned(owner, lambda row: self._appended(row, parsed(items))))

    async def list_items(self, owner: Any, query: Any) -> Any:
        return await self._answering(lambda: self._owned(owner, lambda row: self._page(row, query)))

    async def get_item(self, owner: Any, number: Any, kind: Any) -> Any:
        return await self._answering(lambda: self._owned(owner, lambda row: self._item(row, number, kind)))

    async def delete_item(self, owner: Any, number: Any, kind: Any) -> Any:
        return await self._answering(lambda: self._owned(owner, lambda row: self._delete_item(row, number, kind)))

    async def turn_items(self, owner: Any, budget: Any) -> Any:
        """Every item, oldest first (JSON, as kept), for a response of the conversation; a
        400 naming `conversation` when their JSON takes more than `budget` characters."""
        return await self._answering(lambda: self._owned(owner, lambda row: self._turn(row, budget)))

    async def alarm(self, *_args: Any) -> None:
        row = self._row()
        if row is not None and time.time() >= row["expires_at"]:
            await self.ctx.storage.deleteAll()
            log("conversation_expired")
        elif row is not None:
            self._arm(row["expires_at"])

    async def _answering(self, call: Callable[[], Awaitable[Any]]) -> Any:
        # As chat.resumable's object: failures go back as values, never as a traceback.
        try:
            return await call()
        except (MalformedOrder, ValueError, TypeError, KeyError) as problem:
            ffi.alarm("conversation_malformed_order", detail=type(problem).__name__)
            return _failure(ApiError("internal_error"))
        except ApiError as error:
            return _failure(error)
        except Exception as exc:  # noqa: BLE001 - never a traceback to the Worker
            ffi.alarm("internal_error", route="conversation", detail=type(exc).__name__)
            return _failure(ApiError("internal_error"))

    async def _owned(self, owner: Any, then: Callable[[dict[str, Any]], Any]) -> Any:
        """`then` of the conversation, when `owner` may touch it; else 404, as for one never made."""
        row = self._row()
        if row is None or not isinstance(owner, str) or not hmac.compare_digest(row["owner"].encode(), owner.encode()):
            raise conversation_not_found(CONVERSATION_PREFIX + str(self.ctx.id.toString()))
        answer = then(row)
        return await answer if isinstance(answer, Awaitable) else answer

    # --- the conversation ------------------------------------------------------------------

    async def _create(self, owner: str, order: Any) -> Any:
        if self._row() is not None:
            raise MalformedOrder("exists")  # a new object's id is new
        for statement in SCHEMA:
            self._sql.exec(statement)
        self._sql.exec("INSERT INTO conversation VALUES (1, ?, ?, ?, 0, 0, 0, 0)", int(order["created_at"]),
                       portable_json(order["metadata"]), owner)
        row = self._row()
        assert row is not None
        self._write(row, list(order["items"]))
        log("conversation_created", items=len(order["items"]))
        return self._object(self._row_or_fail())

    def _object(self, row: dict[str, Any]) -> Any:
        return ffi.response(portable_json(conversation_object(row["key"], row["created_at"], row["metadata"])), 200, JSON)

    def _update(self, row: dict[str, Any], metadata: Any) -> Any:
        if not isinstance(metadata, dict):
            raise MalformedOrder("metadata")
        self._sql.exec("UPDATE conversation SET metadata = ?", portable_json(metadata))
        self._touch(row)
        return self._object(self._row_or_fail())

    async def _remove(self, row: dict[str, Any]) -> Any:
        await self.ctx.storage.deleteAll()
        log("conversation_deleted", items=row["items"])
        # The openai package's ConversationDeletedResource (read 2026-12-03).
        return ffi.response(json.dumps({"id": "conv_" + row["key"], "object": "conversation.deleted", "deleted": True}), 200, JSON)

    # --- items -------------------------------------------------------------------------------

    def _add(self, row: dict[str, Any], items: Any, *, capped: bool) -> Any:
        if not isinstance(items, list):
            raise MalformedOrder("items")
        chars = sum(len(portable_json(item)) for item in items)
        if capped and (row["items"] + len(items) > MAX_CONVERSATION_ITEMS or row["chars"] + chars > MAX_CONVERSATION_CHARS):
            raise invalid_request(f"items: this conversation would hold more than {MAX_CONVERSATION_ITEMS} items or "
                                  f"{MAX_CONVERSATION_CHARS} characters of them; begin a new one.", param="items")
        first = row["next_number"]
        self._write(row, items)
        data = [listed_item(item, row["key"], first + index) for index, item in enumerate(items)]
        listed = {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                  "last_id": data[-1]["id"] if data else None, "has_more": False}
        return ffi.response(portable_json(listed), 200, JSON)

    def _appended(self, row: dict[str, Any], items: Any) -> Any:
        # A response's turn is kept whatever the caps: what it holds was bounded by its
        # request, and a conversation past a model's limits can no longer be continued.
        self._add(row, items, capped=False)
        return ffi.json_response(204)

    def _write(self, row: dict[str, Any], items: list[Any]) -> None:
        number, chars = row["next_number"], 0
        for item in items:
            text = portable_json(item)
            chars += len(text)
            for part, start in enumerate(range(0, max(len(text), 1), PART_CHARS)):
                self._sql.exec("INSERT INTO items (number, part, data) VALUES (?, ?, ?)", number, part, text[start : start + PART_CHARS])
            number += 1
        self._sql.exec("UPDATE conversation SET next_number = ?, items = items + ?, chars = chars + ?", number, len(items), chars)
        self._touch(row)

    def _page(self, row: dict[str, Any], query: Any) -> Any:
        asked = PageQuery.from_order(parsed(query))
        after: int | None = None
        if asked.after is not None:
            after = self._number_of(row, asked.after)
            if after is None:
                raise invalid_request(f"after: no item of this conversation has the id '{asked.after}'.", param="after")
        ascending = asked.order == "asc"
        where = "" if after is None else ("WHERE number > ?" if ascending else "WHERE number < ?")
        order = "ASC" if ascending else "DESC"
        numbers = [int(found.number) for found in self._sql.exec(
            f"SELECT number FROM items {where} GROUP BY number ORDER BY number {order} LIMIT ?",
            *([] if after is None else [after]), asked.limit + 1).toArray()]
        # Read one at a time: the page ends early once it is large (listed_page).
        items = (listed_item(self._read(number), row["key"], number) for number in numbers[: asked.limit])
        return ffi.response(portable_json(listed_page(items, more=len(numbers) > asked.limit)), 200, JSON)

    def _item(self, row: dict[str, Any], number: Any, kind: Any) -> Any:
        kept = self._kept(number, kind)
        return ffi.response(portable_json(listed_item(kept, row["key"], int(number))), 200, JSON)

    def _delete_item(self, row: dict[str, Any], number: Any, kind: Any) -> Any:
        kept = self._kept(number, kind)
        self._sql.exec("DELETE FROM items WHERE number = ?", int(number))
        self._sql.exec("UPDATE conversation SET items = items - 1, chars = chars - ?", len(portable_json(kept)))
        self._touch(row)
        return self._object(self._row_or_fail())  # OpenAI answers the conversation (items.py of the openai package)

    def _turn(self, row: dict[str, Any], budget: Any) -> Any:
        if type(budget) is not int:
            raise MalformedOrder("budget")
        if row["chars"] > budget:
            raise invalid_request(f"conversation: this conversation holds {row['chars']} characters of items, more than one "
                                  "request may; begin a new one.", param="conversation")
        parts = self._sql.exec("SELECT number, data FROM items ORDER BY number, part").toArray()
        texts: dict[int, list[str]] = {}
        for found in parts:
            texts.setdefault(int(found.number), []).append(str(found.data))
        return ffi.response("[" + ",".join("".join(text) for text in texts.values()) + "]", 200, JSON)

    # --- storage -----------------------------------------------------------------------------

    def _row(self) -> dict[str, Any] | None:
        exists = self._sql.exec("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'conversation'").one().n
        if not exists:
            return None
        rows = self._sql.exec("SELECT created_at, metadata, owner, next_number, items, chars, expires_at FROM conversation").toArray()
        if not len(rows):
            return None
        found = rows[0]
        return {"key": str(self.ctx.id.toString()), "created_at": int(found.created_at), "metadata": json.loads(str(found.metadata)),
                "owner": str(found.owner), "next_number": int(found.next_number), "items": int(found.items),
                "chars": int(found.chars), "expires_at": float(found.expires_at)}

    def _row_or_fail(self) -> dict[str, Any]:
        row = self._row()
        if row is None:
            raise ApiError("conversation_not_found")
        return row

    def _number_of(self, row: dict[str, Any], value: str) -> int | None:
        number = item_number(value, row["key"])
        try:
            self._kept(number, item_kind(value))
        except ApiError:
            return None
        return number

    def _kept(self, number: Any, kind: Any) -> dict[str, Any]:
        """Item `number`, when it is one of `kind` (else its id was never issued); else 404."""
        if type(number) is float and number.is_integer():
            number = int(number)  # a JS number may arrive as a float
        if type(number) is not int or not len(self._sql.exec("SELECT 1 FROM items WHERE number = ? LIMIT 1", number).toArray()):
            raise ApiError("item_not_found", "Item not found in this conversation.")
        item = self._read(number)
        if not isinstance(kind, str) or not is_of_kind(item, kind):
            raise ApiError("item_not_found", "Item not found in this conversation.")
        return item

    def _read(self, number: int) -> dict[str, Any]:
        parts = self._sql.exec("SELECT data FROM items WHERE number = ? ORDER BY part", number).toArray()
        item: dict[str, Any] = json.loads("".join(str(part.data) for part in parts))
        return item

    def _touch(self, row: dict[str, Any]) -> None:
        """The conversation changed: it is kept for CONVERSATION_TTL_S from now."""
        expires_at = time.time() + read_config(self.env).conversation_ttl_s
        self._sql.exec("UPDATE conversation SET expires_at = ?", expires_at)
        self._arm(expires_at)

    def _arm(self, expires_at: float) -> None:
        ffi.keep_alive(self.ctx, self.ctx.storage.setAlarm(round(expires_at * 1000)))


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise MalformedOrder("text")
    return value


def _failure(error: ApiError) -> Any:
    return ffi.response(*Failure.of(error).reply())
