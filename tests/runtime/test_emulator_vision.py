"""The Workers AI emulator's images (issue 30; docs/emulator.md, "Images") in the real runtime.

Through the Worker's POST /api/chat (and /api/chat/raw): a vision model's answer begins by
naming each image, its format and pixel size read from its bytes; a `prompts` script is
keyed by an image turn's text parts; the `ai_run` record counts the images and their bytes
and holds none of them; a named model without vision is refused by the Worker (400) before
any model call.

The emulator's own refusals (5006 for a model without vision, 5004 for an image it cannot
read) cannot be reached honestly through the Worker: it checks every image before any call
and sends images only to the models the same catalog marks with vision (an unlisted model,
ALLOW_UNLISTED_MODELS, is one the emulator does not serve at all: 5007). So they, and the
answers the Worker never asks for whole, go through a probe Worker (served with --main, the
same AI service binding) that calls `env.AI.run` as it is told, as
test_emulator_json_mode.py does.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
from typing import Any

import httpx
import pytest

from tests.harness.client import ChatResult, chat
from tests.harness.runtime import LocalRuntime, RuntimeOptions
from tests.harness.scenarios import done_frame, echo, native_frame, scripted_options
from tests.image_files import data_url, gif, image_part, png, webp_extended, webp_lossless, webp_lossy
from tests.runtime.test_catalog import EVERY_MODEL
from tests.runtime.test_emulator_json_mode import PROBE_WORKER, native_text, probe

GEMMA = "@cf/google/gemma-4-26b-a4b-it"  # wrangler.toml's VISION_MODEL: OpenAI framing
SCOUT = "@cf/meta/llama-4-scout-17b-16e-instruct"  # vision, native framing, JSON mode only whole
GLM = "@cf/zai-org/glm-4.7-flash"  # wrangler.toml's MODEL: no vision, OpenAI's schema
LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # no vision, a string-only schema


# --- images, built here ----------------------------------------------------------------


GIF = gif(1, 1)


def jpeg(width: int, height: int) -> bytes:
    """A progressive JPEG's header: its frame header (SOF2) after a JFIF segment, a fill byte
    and 5,000 bytes of EXIF, so the reader walks segments to find it."""
    jfif = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    exif = b"\xff\xff\xe1" + struct.pack(">H", 2 + 5000) + b"E" * 5000
    frame = b"\xff\xc2" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    scan = b"\xff\xda" + struct.pack(">H", 8) + b"\x01\x01\x00\x00\x3f\x00" + bytes(16) + b"\xff\xd9"
    return b"\xff\xd8" + jfif + exif + frame + scan


PNG = png(3, 2)


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def turn(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": list(parts)}], **fields}


# --- through the Worker ------------------------------------------------------------------
# The Worker's options are the default (wrangler.toml's vars), so these tests share the
# runtime most suites use; the emulator's settings (framing, style) are served per test.


async def answer(http: httpx.AsyncClient, runtime: LocalRuntime, payload: dict[str, Any]) -> ChatResult:
    result = await chat(http, runtime.url, payload)
    assert result.status == 200 and result.terminal.name == "done", (result.status, result.body[:300])
    return result


@pytest.mark.parametrize("style", ["words", "prose"])
@pytest.mark.parametrize("framing", ["native", "openai"])
async def test_a_vision_model_begins_its_answer_by_naming_each_image_it_was_sent(start_runtime, http, framing, style):
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_format=framing, ai_style=style))
    result = await answer(http, runtime, turn(text_part("What are these?"), image_part(PNG), image_part(GIF, "image/gif")))
    meta = result.events[0]
    assert meta.name == "meta" and meta.data and meta.data["model"] == GEMMA, "a turn with images and no model: VISION_MODEL"
    assert result.text.startswith("I see a 3\u00d72 PNG and a 1\u00d71 GIF."), result.text[:80]
    assert len(result.text) > len("I see a 3×2 PNG and a 1×1 GIF.") + 20, "the usual answer follows"


async def test_every_format_is_read_from_its_own_header(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    images = [PNG, jpeg(640, 480), GIF, webp_lossy(5, 7), webp_lossless(300, 200), webp_extended(1024, 768)]
    result = await answer(http, runtime, turn(*[image_part(image) for image in images], text_part("Compare them.")))
    assert result.text.startswith("I see a 3×2 PNG, a 640×480 JPEG, a 1×1 GIF, a 5×7 WebP, a 300×200 WebP and a 1024×768 WebP."), \
        result.text[:120]


async def test_the_ai_run_record_counts_the_images_and_their_bytes_and_holds_neither_text_nor_bytes(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    mark = len(runtime.lines)
    secret = "Describe the zanzibarian pelican"
    await answer(http, runtime, turn(text_part(secret), image_part(PNG), image_part(GIF, "image/gif")))
    record = runtime.wait_for_record("ai_run", since=mark, model=GEMMA)
    assert record["images"] == 2 and record["image_bytes"] == len(PNG) + len(GIF)
    assert record["history"][-1] == {"role": "user"}
    logged = "\n".join(runtime.own_lines(mark))
    for image in (PNG, GIF):
        assert base64.b64encode(image).decode()[:24] not in logged, "no image bytes in any log line"
    assert "zanzibarian" not in logged, "no message text in any log line"


async def test_a_prompts_script_is_keyed_by_the_text_parts_of_an_image_turn(start_runtime, http):
    scripted = [native_frame("scripted: "), echo(), done_frame()]
    runtime = start_runtime(scripted_options(prompts={"What is this?\nAnswer briefly.": {"steps": scripted}}))
    result = await answer(http, runtime, turn(image_part(PNG), text_part("What is this?"), text_part("Answer briefly.")))
    assert result.text == "scripted: What is this?\nAnswer briefly.", "the key and the echo are the joined text parts"


async def test_a_named_model_without_vision_is_refused_by_the_worker_before_any_model_call(start_runtime, http):
    runtime = start_runtime(RuntimeOptions(ai_pace=0))
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/api/chat", json=turn(text_part("What is it?"), image_part(PNG), model=GLM))
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["message"] == f"messages[0].content[1]: {GLM} does not take images."
    assert not any(record["event"] == "ai_run" for record in runtime.records(mark))


async def test_a_whole_json_answer_carries_the_images_sentence(start_runtime, http):
    # Scout answers JSON mode only whole, so the Worker asks it with stream: false. It is
    # served on test_catalog.py's runtime of every catalog model.
    runtime = start_runtime(EVERY_MODEL)
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/api/chat/raw", json=turn(
        text_part("What is it?"), image_part(PNG), model=SCOUT, response_format={"type": "json_object"}))
    assert response.status_code == 200, response.text
    assert json.loads(native_text(response.content))["images"] == "I see a 3×2 PNG."
    assert runtime.wait_for_record("ai_run", since=mark, model=SCOUT)["stream"] is False


# --- the emulator alone: a probe Worker calls the binding as it is told -------------------
# A Worker of its own costs a runtime start (its `main`); every probe test shares it.


@pytest.fixture(scope="session")
def vision_probe(tmp_path_factory: pytest.TempPathFactory) -> RuntimeOptions:
    path = tmp_path_factory.mktemp("vision-probe") / "probe.js"
    path.write_text(PROBE_WORKER, encoding="utf-8")
    return RuntimeOptions(ai_format=None, ai_pace=0, main=str(path))


def asked(*parts: dict[str, Any], stream: bool = False) -> dict[str, Any]:
    return {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": list(parts)}], "stream": stream}


@pytest.mark.parametrize("model", [pytest.param(GLM, id="openai-schema"), pytest.param(LLAMA, id="string-only-schema")])
async def test_a_model_without_vision_fails_an_image_with_5006_bad_input(start_runtime, http, vision_probe, model):
    runtime = start_runtime(vision_probe)
    mark = len(runtime.lines)
    response = await probe(http, runtime, model, asked(text_part("What is it?"), image_part(PNG), stream=True))
    assert response.status_code == 502
    assert response.json()["error"] == "5006: Bad input: Type mismatch of '/messages/1/content', 'array' not in 'string'"
    record = runtime.wait_for_record("ai_run", since=mark, model=model)
    assert record["refused"] == "5006" and record["images"] == 1 and record["image_bytes"] == len(PNG)


async def test_text_parts_alone_reach_a_model_without_vision_and_are_logged_as_no_images(start_runtime, http, vision_probe):
    runtime = start_runtime(vision_probe)
    mark = len(runtime.lines)
    response = await probe(http, runtime, GLM, asked(text_part("Hello"), text_part("there")))
    assert response.status_code == 200 and response.json()["result"]["choices"][0]["message"]["content"]
    record = runtime.wait_for_record("ai_run", since=mark, model=GLM)
    assert record["images"] == 0 and record["image_bytes"] == 0 and "refused" not in record


UNREADABLE = "5004: Invalid data type for base64 input: "


@pytest.mark.parametrize(("url", "problem"), [
    pytest.param("data:image/png;base64,iVBOR w0KGgo=", "not a base64 data URL", id="not-base64"),
    pytest.param("https://example.com/cat.png", "not a base64 data URL", id="an-https-url"),
    pytest.param(data_url(b"just some text, no image"), "not a PNG, JPEG, WebP or GIF image", id="not-an-image"),
    pytest.param(data_url(PNG[:20]), "not a PNG, JPEG, WebP or GIF image", id="a-cut-png-header"),
    pytest.param(data_url(b"GIF89a\x00\x00\x01\x00" + bytes(8)), "not a PNG, JPEG, WebP or GIF image", id="no-pixels"),
    pytest.param(data_url(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(9) + b"\xff\xda\x00\x08" + bytes(64)),
                 "not a PNG, JPEG, WebP or GIF image", id="a-jpeg-scan-before-any-frame-header"),
    pytest.param(7, "number", id="a-url-that-is-no-string"),
])
async def test_an_image_a_vision_model_cannot_read_fails_with_5004(start_runtime, http, vision_probe, url, problem):
    runtime = start_runtime(vision_probe)
    response = await probe(http, runtime, GEMMA, asked(text_part("What is it?"), {"type": "image_url", "image_url": {"url": url}}))
    assert response.status_code == 502 and response.json()["error"] == UNREADABLE + problem


@pytest.mark.parametrize("style", ["words", "prose"])
@pytest.mark.parametrize("model", [pytest.param(GEMMA, id="openai-framing"), pytest.param(SCOUT, id="native-framing")])
async def test_a_whole_answer_names_the_image_by_its_bytes_not_its_declared_media_type(start_runtime, http, vision_probe, model,
                                                                                       style):
    runtime = start_runtime(dataclasses.replace(vision_probe, ai_style=style))
    response = await probe(http, runtime, model, asked(image_part(PNG, "image/gif"), text_part("What is it?")))
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    text = result["choices"][0]["message"]["content"] if model == GEMMA else result["response"]
    assert text.startswith("I see a 3×2 PNG."), text[:80]


async def test_a_streamed_answer_from_the_emulator_names_the_image_in_the_models_framing(start_runtime, http, vision_probe):
    runtime = start_runtime(vision_probe)
    response = await probe(http, runtime, SCOUT, asked(image_part(webp_lossless(300, 200), "image/png"), stream=True))
    assert response.status_code == 200
    assert native_text(response.content).startswith("I see a 300×200 WebP.")
