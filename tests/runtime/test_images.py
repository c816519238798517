"""Images through the real runtime (issue 30): answered by VISION_MODEL and named in `meta`,
resumable answers with images, and every bound and hostile image refused with a 4xx naming
the part while the Worker keeps serving.

The bounds run in workerd alone: wrangler dev's proxy gives no response to a large upload
the Worker answers early (../shared/workerd-offline.md), and the largest request allowed is
a figure about the isolate, which only the production-like runtime gives.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from chat.api import images
from tests.harness.client import USER, chat
from tests.harness.runtime import BODY_LIMIT, RuntimeOptions
from tests.image_files import data_url, gif, image_part, png, png_header_only

GEMMA = "@cf/google/gemma-4-26b-a4b-it"  # wrangler.toml's VISION_MODEL
GLM = "@cf/zai-org/glm-4.7-flash"  # wrangler.toml's MODEL, without vision
QUESTION = {"type": "text", "text": "What is in these pictures?"}
# OpenAI framing for every model (as on Workers AI); no pacing: what is checked is what the
# answer says, not when.
PLAIN = RuntimeOptions(ai_pace=0, ai_format=None)
ALONE = RuntimeOptions(ai_pace=0, ai_format=None, workerd_direct=True)


def turn(*parts: object, **fields: object) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": [QUESTION, *parts]}], **fields}


def padded_png(size: int) -> bytes:
    """A 2×2 PNG padded to exactly `size` bytes (a decoder stops at IEND; the model's reader
    and the Worker's read the header)."""
    head = png(2, 2)
    return head + b"\x00" * (size - len(head))


@pytest.mark.smoke
async def test_an_image_turn_naming_no_model_is_answered_by_vision_model_and_meta_says_so(start_runtime, http):
    runtime = start_runtime(PLAIN)
    mark = len(runtime.lines)
    answer = await chat(http, runtime.url, turn(image_part(png(3, 2)), image_part(gif(1, 1), "image/png")))
    assert answer.status == 200 and answer.terminal.name == "done"
    assert answer.events[0].name == "meta" and answer.events[0].data["model"] == GEMMA
    assert answer.text.startswith("I see a 3\u00d72 PNG and a 1\u00d71 GIF.")  # the GIF sent as a GIF, whatever its URL said
    run = runtime.wait_for_record("ai_run", since=mark)
    assert (run["model"], run["images"]) == (GEMMA, 2)
    assert not any("base64" in line or "iVBOR" in line for line in runtime.own_lines(mark))  # no image bytes in any log


async def test_a_resumable_image_turn_is_answered_and_read_again_whole(start_runtime, http):
    runtime = start_runtime(PLAIN)
    first = await chat(http, runtime.url, turn(image_part(png(5, 4)), resumable=True))
    assert first.status == 200 and first.terminal.name == "done" and first.text.startswith("I see a 5\u00d74 PNG.")
    stream_id = first.events[0].data["stream_id"]
    again = await chat(http, runtime.url, method="GET", path=f"/api/chat/streams/{stream_id}")
    assert again.text == first.text and again.terminal.name == "done"


async def test_the_use_chat_route_reads_a_file_part_as_an_image(start_runtime, http):
    runtime = start_runtime(PLAIN)
    file_part = {"type": "file", "mediaType": "image/png", "filename": "p.png", "url": data_url(png(3, 2))}
    answer = await chat(http, runtime.url, {"messages": [{"id": "u1", "role": "user", "parts": [file_part, QUESTION]}]},
                        path="/api/ui-chat")
    deltas = "".join(event.data["delta"] for event in answer.events if event.data.get("type") == "text-delta")
    assert answer.status == 200 and deltas.startswith("I see a 3\u00d72 PNG.")
    pdf = {"type": "file", "mediaType": "application/pdf", "url": data_url(b"%PDF-1.7", "application/pdf")}
    refused = await http.post(runtime.url + "/api/ui-chat", json={"messages": [{"id": "u1", "role": "user", "parts": [QUESTION, pdf]}]})
    assert refused.status_code == 400 and refused.json()["error"]["message"].startswith("messages[0].parts[1]: only images")


async def largest_allowed(http: httpx.AsyncClient, url: str) -> httpx.Response:
    # Two images of half the request's image bytes each, in a body MAX_BODY_BYTES could never
    # hold, beside a question with a character above U+FFFF (which made Python hold a whole
    # body decoded at once at four bytes a character: chat.api.body).
    half = padded_png(images.MAX_REQUEST_IMAGE_BYTES // 2)
    question = {"type": "text", "text": "What are these? \U0001f600"}
    body = {"model": GEMMA, "messages": [{"role": "user", "content": [question, image_part(half), image_part(half)]}]}
    return await http.post(url + "/v1/chat/completions", json=body)


async def test_the_largest_request_allowed_is_answered_and_the_bounds_past_it_are_4xx_naming_the_part(start_runtime, http):
    runtime = start_runtime(ALONE)
    mark = len(runtime.lines)
    largest = await largest_allowed(http, runtime.url)
    assert largest.status_code == 200, largest.text
    assert largest.json()["choices"][0]["message"]["content"].startswith("I see a 2\u00d72 PNG and a 2\u00d72 PNG.")
    assert largest.json()["model"] == GEMMA

    half = padded_png(images.MAX_REQUEST_IMAGE_BYTES // 2)
    cases = [
        (turn(image_part(half), image_part(half), image_part(png(1, 1))), 413, "messages[0].content[3]"),
        (turn(image_part(padded_png(images.MAX_IMAGE_BYTES + 1))), 413, "messages[0].content[1]"),
        (turn(*[image_part(png(1, 1))] * (images.MAX_IMAGES + 1)), 400, f"messages[0].content[{images.MAX_IMAGES + 1}]"),
        (turn(image_part(png_header_only(60_000, 60_000))), 400, "messages[0].content[1]"),  # a bomb's header
        (turn({"type": "image_url", "image_url": {"url": "http://169.254.169.254/latest/meta-data"}}), 400, "messages[0].content[1]"),
        (turn({"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 1001 + "="}}), 400, "messages[0].content[1]"),
        (turn(image_part(b"\xff\xd8" + b"\xff\xe1\x00\x02" * 200_000, "image/jpeg")), 400, "messages[0].content[1]"),
        ({"model": GLM, **turn(image_part(png(1, 1)))}, 400, "messages[0].content[1]"),
    ]
    for body, status, param in cases:
        refused = await http.post(runtime.url + "/v1/chat/completions", json={"model": GEMMA, **body})
        assert (refused.status_code, refused.json()["error"]["param"]) == (status, param), refused.text
    # The rest of a body with images is held to MAX_BODY_BYTES, as a body without any is.
    long_text = {"messages": [{"role": "user", "content": [{"type": "text", "text": "x" * (BODY_LIMIT + 1000)}, image_part(png(1, 1))]}]}
    assert (await http.post(runtime.url + "/api/chat", json=long_text)).status_code == 413
    assert (await http.post(runtime.url + "/api/chat", json={"messages": [{"role": "user", "content": "x" * (BODY_LIMIT + 1000)}]})).status_code == 413
    # Announced past the route's limit: refused before a byte of it is read.
    reader, writer = await asyncio.open_connection("127.0.0.1", runtime.port)
    writer.write(f"POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\nconnection: close\r\n"
                 f"content-length: {BODY_LIMIT + images.MAX_IMAGE_TEXT_BYTES + 1}\r\n\r\n{{}}".encode())
    await writer.drain()
    announced = await asyncio.wait_for(reader.read(), timeout=30)
    writer.close()
    assert announced.split(b" ", 2)[1] == b"413"
    runs = [record for record in runtime.records(mark) if record["event"] == "ai_run"]
    assert [run["images"] for run in runs] == [2]  # nothing refused reached the model
    after = await chat(http, runtime.url, {"messages": USER})
    assert after.terminal.name == "done" and not runtime.crash_lines(mark)


async def test_data_urls_the_route_does_not_read_are_held_to_max_body_bytes_and_escaped_slashes_are_not(start_runtime, http):
    # The attack of 2026-12-02: data URLs in places /api/ui-chat never reads took the images'
    # room past the body limit, and PHP's escaped slashes counted against it.
    runtime = start_runtime(ALONE)
    junk = "data:image/png;base64," + "A" * (BODY_LIMIT + 1000)
    for body in ({"messages": [{"id": "m", "role": "user", "parts": [QUESTION, {"type": "image_url", "image_url": {"url": junk}}]}]},
                 {"messages": [{"id": "m", "role": "user", "parts": [QUESTION], "content": [{"type": "image_url", "image_url": {"url": junk}}]}]}):
        refused = await http.post(runtime.url + "/api/ui-chat", json=body)
        assert refused.status_code == 413, refused.text
    escaped = json.dumps({"model": GEMMA, **turn(image_part(padded_png(images.MAX_IMAGE_BYTES)))}).replace("/", "\\/")
    answer = await http.post(runtime.url + "/v1/chat/completions", content=escaped, headers={"content-type": "application/json"})
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"].startswith("I see a 2\u00d72 PNG.")


async def test_the_largest_resumable_request_and_four_largest_at_once_are_all_answered_and_the_isolate_lives(start_runtime, http):
    # Four at once: each holds its copies of 6 MiB of images in the same isolate while it is read.
    runtime = start_runtime(ALONE)
    mark = len(runtime.lines)
    # The page's path first: the order, images and all, crosses to the Durable Object over RPC.
    half = image_part(padded_png(images.MAX_REQUEST_IMAGE_BYTES // 2))
    resumable = await chat(http, runtime.url, turn(half, half, resumable=True))
    assert resumable.terminal.name == "done" and resumable.text.startswith("I see a 2\u00d72 PNG and a 2\u00d72 PNG.")
    answers = await asyncio.gather(*(largest_allowed(http, runtime.url) for _ in range(4)))
    assert [answer.status_code for answer in answers] == [200] * 4, [answer.text[:200] for answer in answers]
    assert all(json.loads(answer.text)["choices"][0]["finish_reason"] == "stop" for answer in answers)
    assert not runtime.crash_lines(mark)
