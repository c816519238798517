"""A small, independent reader of the Worker's protocol, for black-box tests."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

USER = [{"role": "user", "content": "Tell me about streams."}]


@dataclass
class Event:
    name: str
    data: dict[str, Any] | None
    at: float
    id: str | None = None  # the SSE `id:` field, or NDJSON's `id` member (resumable answers)


@dataclass
class ChatResult:
    status: int
    headers: httpx.Headers
    body: bytes = b""
    events: list[Event] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.events]

    @property
    def text(self) -> str:
        return "".join(e.data["text"] for e in self.events if e.name == "delta" and e.data)

    @property
    def terminal(self) -> Event:
        assert self.events and self.events[-1].name in ("done", "error"), self.names
        return self.events[-1]

    def json(self) -> Any:
        return json.loads(self.body)


def parse_sse(buffer: str, result: ChatResult, now: float) -> str:
    """Consume complete events from `buffer` (LF line ends, as the Worker writes)."""
    while "\n\n" in buffer:
        block, buffer = buffer.split("\n\n", 1)
        name, data_lines, event_id = "message", [], None
        for line in block.split("\n"):
            if line.startswith(":"):
                result.comments.append(line[1:].strip())
            elif line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("id: "):
                event_id = line[len("id: "):]
            elif line.startswith("data: "):
                data_lines.append(line[len("data: "):])
        if data_lines:
            data = "\n".join(data_lines)
            value = {"done_marker": True} if data == "[DONE]" else json.loads(data)  # the AI SDK's end
            result.events.append(Event(name, value, now, event_id))
    return buffer


async def chat(
    http: httpx.AsyncClient,
    url: str,
    payload: Any = None,
    *,
    path: str = "/api/chat",
    headers: dict[str, str] | None = None,
    leave_after_deltas: int | None = None,
    leave_after_events: int | None = None,
    content: bytes | None = None,
    method: str = "POST",
) -> ChatResult:
    """POST a chat turn and read the whole answer (or leave after N deltas, or N events).
    With method="GET", read a resumable answer at `path` instead."""
    kwargs: dict[str, Any] = {"headers": headers or {}}
    if content is not None:
        kwargs["content"] = content
    elif method == "POST":
        kwargs["json"] = {"messages": USER} if payload is None else payload
    async with http.stream(method, url + path, **kwargs) as response:
        result = ChatResult(response.status_code, response.headers)
        streaming = response.headers.get("content-type", "").startswith("text/event-stream") and path != "/api/chat/raw"
        ndjson = response.headers.get("content-type", "").startswith("application/x-ndjson")
        buffer = ""
        decoder = __import__("codecs").getincrementaldecoder("utf-8")()
        async for chunk in response.aiter_raw():
            result.body += chunk
            now = time.monotonic()
            if streaming:
                buffer = parse_sse(buffer + decoder.decode(chunk), result, now)
            elif ndjson:
                buffer += decoder.decode(chunk)
                while "\n" in buffer:
                    line, buffer = buffer.split("\n", 1)
                    record = json.loads(line)
                    event_id = record.pop("id", None)
                    result.events.append(Event(record.pop("type"), record, now, None if event_id is None else str(event_id)))
            if leave_after_deltas is not None and sum(e.name == "delta" for e in result.events) >= leave_after_deltas:
                break
            if leave_after_events is not None and len(result.events) >= leave_after_events:
                break
    return result


async def drain_posts(url: str, bodies: list[dict[str, Any]]) -> int:
    """POSTs each body in turn to `url` and reads each answer to its end (the benchmarks'
    load); the bytes read in all."""
    size = 0
    async with httpx.AsyncClient(timeout=120) as client:
        for body in bodies:
            async with client.stream("POST", url, json=body) as response:
                assert response.status_code == 200, response.status_code
                async for chunk in response.aiter_raw():
                    size += len(chunk)
    return size
