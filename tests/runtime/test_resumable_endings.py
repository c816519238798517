"""Every reader of a resumable answer ends with exactly one terminal event, also when the
answer goes away under a slow reader: its time runs out (`expired`), or a new turn of
the same UI chat replaces it (`stopped`). Both once ended a reader's stream cleanly in the
middle of the answer, which a client could not tell from a finished one.

The slow reader is a socket with a small receive buffer that reads a little at a time, so
the object's reader stream waits on it (highWaterMark 0) as it would on a slow network."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket

from tests.harness.runtime import LocalRuntime
from tests.harness.scenarios import done_frame, held, native_frame, repeat, script, scripted_options

# 16 MB: far more than the kernel's socket buffers (up to 4 MB each way here) hold.
FRAME = "x" * 4000
EVENTS = 4000
LONG_ANSWER = [repeat(EVENTS, 'data: {"response":"' + FRAME + '"}\n\n'), done_frame()]
TTL_S = 4
# In workerd alone: the dev proxy of wrangler dev reads ahead of a slow client.
OPTIONS = dataclasses.replace(scripted_options(LONG_ANSWER, variables={"RESUME_TTL_S": str(TTL_S)}), workerd_direct=True)


class SlowReader:
    """An HTTP/1.1 request on a socket whose receive buffer is small, read `step` bytes at
    a time when asked: the server can send only as fast as this reads."""

    def __init__(self, runtime: LocalRuntime, method: str, path: str, body: dict | None = None) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self._sock.connect(("127.0.0.1", runtime.port))
        self._sock.settimeout(30)
        payload = b"" if body is None else json.dumps(body).encode()
        head = (f"{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{runtime.port}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n")
        self._sock.sendall(head.encode() + payload)
        self.received = b""

    async def read(self, step: int, seconds: float) -> None:
        """Read about `step` bytes every 50 ms for `seconds`."""
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        while loop.time() < end:
            chunk = await loop.run_in_executor(None, self._sock.recv, step)
            if not chunk:
                return
            self.received += chunk
            await asyncio.sleep(0.05)

    async def read_to_end(self) -> bytes:
        loop = asyncio.get_running_loop()
        while True:
            chunk = await loop.run_in_executor(None, self._sock.recv, 1 << 16)
            if not chunk:
                self._sock.close()
                return self.body()
            self.received += chunk

    def body(self) -> bytes:
        head, _, chunked = self.received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head[:200]
        return _dechunk(chunked)


def _dechunk(data: bytes) -> bytes:
    out, position = [], 0
    while True:
        line_end = data.index(b"\r\n", position)
        size = int(data[position:line_end], 16)
        if size == 0:
            return b"".join(out)
        out.append(data[line_end + 2 : line_end + 2 + size])
        position = line_end + 2 + size + 2


def events(body: bytes) -> list[tuple[str, str]]:
    """(event name or "", data) of each SSE event; comments skipped."""
    parsed = []
    for block in body.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":"))
        if "data" in fields:
            parsed.append((fields.get("event", ""), fields["data"]))
    return parsed


async def test_a_slow_reader_still_reading_when_the_answer_expires_ends_with_expired(start_runtime):
    runtime = start_runtime(OPTIONS)
    mark = len(runtime.lines)
    reader = SlowReader(runtime, "POST", "/api/chat", {"messages": [{"role": "user", "content": "hi"}], "resumable": True})
    await reader.read(4096, 1.0)
    runtime.wait_for_record("chat_resumable_stored", since=mark, timeout=30)  # the answer has ended
    await reader.read(4096, TTL_S + 3.0)  # still far from its end when the answer expires
    runtime.wait_for_record("chat_resumable_expired", since=mark, timeout=30)
    received = events(await reader.read_to_end())
    names = [name for name, _ in received]
    assert names[0] == "meta" and names.count("delta") < EVENTS, "the reader had not read it all"
    terminals = [(name, data) for name, data in received if name in ("done", "error")]
    assert len(terminals) == 1 and received[-1] == terminals[0], names[-3:]
    assert json.loads(terminals[0][1])["code"] == "expired"


async def test_a_slow_reader_of_a_ui_chat_answer_a_new_turn_replaced_ends_with_stopped(start_runtime, http):
    runtime = start_runtime(OPTIONS)
    mark = len(runtime.lines)
    turn = {"id": "slow-reader-1", "resumable": True, "messages": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}]}
    reader = SlowReader(runtime, "POST", "/api/ui-chat", turn)
    await reader.read(4096, 1.0)
    runtime.wait_for_record("chat_resumable_stored", since=mark, timeout=30)
    second = await http.post(runtime.url + "/api/ui-chat", json=turn)
    assert second.status_code == 200 and '"type":"finish"' in second.text
    chunks = [data for _, data in events(await reader.read_to_end())]
    assert chunks[-1] == "[DONE]", chunks[-3:]
    last = json.loads(chunks[-2])
    assert last["type"] == "error" and "stopped" in last["errorText"], chunks[-3:]
    assert not any('"type":"finish"' in chunk for chunk in chunks), "the reader had not read the answer to its end"
    assert chunks.count("[DONE]") == 1


async def test_readers_of_a_ui_chat_answer_replaced_by_a_new_turn_get_one_terminal_each(start_runtime, http):
    # Readers that keep up send the stopped answer's own terminal (`error`, `[DONE]`)
    # while the answer's end is still being recorded; the new turn must not give them a
    # second one on their next pull (seen 10 times in 15 before the fix). Each replaced
    # answer is held (never released), so it is still being written when the next turn
    # comes however busy the machine is: a paced 5 s answer finished first in a loaded run.
    runtime = start_runtime(scripted_options([native_frame("Bye"), done_frame()],
                                             prompts={"Hi": script([native_frame("Hel"), native_frame("lo"), held("ui-replaced-never")])}))
    since = len(runtime.lines)

    def turn(text: str) -> dict:
        return {"id": "many-readers-1", "resumable": True, "messages": [{"role": "user", "parts": [{"type": "text", "text": text}]}]}

    async def read(method: str, path: str, body: dict | None = None, started: asyncio.Event | None = None) -> list[str]:
        async with http.stream(method, runtime.url + path, json=body) as response:
            assert response.status_code == 200
            chunks = []
            async for chunk in response.aiter_text():
                chunks.append(chunk)
                if started is not None:
                    started.set()  # the reader has its first bytes: it is attached
            text = "".join(chunks)
        return [data for _, data in events(text.encode())]

    replaced: list[asyncio.Task[list[str]]] = []
    for number in range(3):  # each turn replaced by the next, with readers attached
        replaced.append(asyncio.create_task(read("POST", "/api/ui-chat", turn("Hi"))))
        await asyncio.to_thread(runtime.wait_for_count, "ai_run", number + 1, since)  # the answer is under way
        attached = [asyncio.Event() for _ in range(6)]
        replaced += [asyncio.create_task(read("GET", "/api/ui-chat/many-readers-1/stream", started=event)) for event in attached]
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in attached)), timeout=30)
    last = await read("POST", "/api/ui-chat", turn("Bye"))
    assert last[-1] == "[DONE]" and any('"type":"finish"' in chunk for chunk in last)
    for chunks in await asyncio.gather(*replaced):
        terminals = [chunk for chunk in chunks if chunk == "[DONE]" or '"type":"error"' in chunk or '"type":"finish"' in chunk]
        assert len(terminals) == 2 and terminals[-1] == "[DONE]" == chunks[-1], terminals
        assert "stopped" in terminals[0]
