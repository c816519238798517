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
        name, data_lines = "message", []
        for line in block.split("\n"):
            if line.startswith(":"):
                result.comments.append(line[1:].strip())
            elif line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                data_lines.append(line[len("data: "):])
        if data_lines:
            result.events.append(Event(name, json.loads("\n".join(data_lines)), now))
    return buffer


async def chat(
    http: httpx.AsyncClient,
    url: str,
    payload: Any = None,
    *,
    path: str = "/api/chat",
    headers: dict[str, str] | None = None,
    leave_after_deltas: int | None = None,
    content: bytes | None = None,
) -> ChatResult:
    """POST a chat turn and read the whole answer (or leave after N deltas)."""
    kwargs: dict[str, Any] = {"headers": headers or {}}
    if content is not None:
        kwargs["content"] = content
    else:
        kwargs["json"] = {"messages": USER} if payload is None else payload
    async with http.stream("POST", url + path, **kwargs) as response:
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
                    result.events.append(Event(record.pop("type"), record, now))
            if leave_after_deltas is not None and sum(e.name == "delta" for e in result.events) >= leave_after_deltas:
                break
    return result
