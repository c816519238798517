"""Images in a chat turn (chat.api.images and the surfaces that read them): the format and
size from the bytes, every bound at its edge, hostile headers, the parts on each surface,
and the model a turn with images goes to."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chat.api import images
from chat.api.body import BodyTooLarge
from chat.api.body import split as split_body
from chat.api.images import ImageBudget, ImageError, checked_data_url, read_image
from chat.api.openai import model_list, validate_completion
from chat.api.validation import validate_chat, validate_ui_chat
from chat.config import Config, ConfigError
from chat.web.errors import ApiError
from tests.image_files import (
    data_url,
    gif,
    image_part,
    jpeg_header,
    png,
    png_header_only,
    webp_extended,
    webp_lossless,
    webp_lossy,
)

TEXT_MODEL = "@cf/zai-org/glm-4.7-flash"  # no vision (its page)
VISION_MODEL = "@cf/google/gemma-4-26b-a4b-it"
CONFIG = Config(model=TEXT_MODEL, fallback_models=("@cf/qwen/qwen3.8-27b",), vision_model=VISION_MODEL)


@pytest.mark.parametrize(("data", "described"), [
    pytest.param(png(3, 2), "a 3\u00d72 PNG", id="png"),
    pytest.param(gif(1, 1), "a 1\u00d71 GIF", id="gif"),
    pytest.param(jpeg_header(640, 480), "a 640\u00d7480 JPEG", id="jpeg"),
    pytest.param(jpeg_header(17, 9, app_segments=30), "a 17\u00d79 JPEG", id="jpeg-after-many-segments"),
    pytest.param(webp_lossless(300, 200), "a 300\u00d7200 WebP", id="webp-lossless"),
    pytest.param(webp_extended(4000, 3000), "a 4000\u00d73000 WebP", id="webp-extended"),
    pytest.param(webp_lossy(64, 48), "a 64\u00d748 WebP", id="webp-lossy"),
])
def test_the_format_and_pixel_size_are_read_from_the_bytes(data: bytes, described: str) -> None:
    assert read_image(data).describe() == described


@pytest.mark.parametrize("data", [
    pytest.param(b"", id="empty"),
    pytest.param(b"%PDF-1.7\n", id="pdf"),
    pytest.param(b"<svg xmlns='http://www.w3.org/2000/svg'/>", id="svg"),
    pytest.param(png(3, 2)[:20], id="png-cut-in-its-header"),
    pytest.param(png(3, 2)[:10], id="png-cut-before-its-header"),
    pytest.param(png(3, 2)[:8] + b"\x00\x00\x00\x0dIDAT" + b"\x00" * 13, id="png-without-a-header-first"),
    pytest.param(png_header_only(0, 5), id="png-of-no-pixels"),
    pytest.param(jpeg_header(4, 4)[:-8], id="jpeg-cut-in-its-frame-header"),
    pytest.param(b"\xff\xd8\xff\xda\x00\x02", id="jpeg-scan-before-frame"),
    pytest.param(b"\xff\xd8" + b"\xff" * 5000, id="jpeg-of-fill-bytes"),
    pytest.param(b"\xff\xd8\xff\xe1\x00\x01", id="jpeg-segment-shorter-than-its-length"),
    pytest.param(b"\xff\xd8" + b"\xff\xe1\x00\x02" * 2000 + b"\xff\xc0", id="jpeg-more-segments-than-read"),
    pytest.param(b"\xff\xd8\x00\x00", id="jpeg-not-a-marker"),
    pytest.param(webp_lossless(2, 2)[:22], id="webp-cut"),
    pytest.param(b"RIFF\x00\x00\x00\x00WEBPVP8Q", id="webp-unknown-chunk"),
    pytest.param(b"GIF89a\x00\x00\x01\x00", id="gif-of-no-pixels"),
])
def test_bytes_that_are_no_image_taken_here_are_refused_with_a_reason(data: bytes) -> None:
    with pytest.raises(ImageError) as refused:
        read_image(data)
    assert str(refused.value)


@given(st.binary(max_size=200))
def test_any_bytes_are_read_or_refused_never_anything_else(data: bytes) -> None:
    for prefix in (b"", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"RIFF\x00\x00\x00\x00WEBP", b"GIF89a"):
        try:
            image = read_image(prefix + data)
        except ImageError:
            continue
        assert image.width > 0 and image.height > 0 and image.size == len(prefix + data)


def url_refusal(url: Any, budget: ImageBudget | None = None) -> ApiError:
    with pytest.raises(ApiError) as refused:
        checked_data_url(url, "messages[0].content[1]", budget or ImageBudget())
    assert refused.value.param == "messages[0].content[1]"
    assert refused.value.message.startswith("messages[0].content[1]")
    return refused.value


@pytest.mark.parametrize("url", [
    pytest.param("https://example.com/cat.png", id="https"),
    pytest.param("http://169.254.169.254/latest", id="metadata-address"),
    pytest.param("file:///etc/passwd", id="file"),
    pytest.param(7, id="not-a-string"),
    pytest.param("data:image/png,%89PNG", id="not-base64"),
    pytest.param("data:image/png;base64", id="no-comma"),
    pytest.param("data:image/png;base64,iVBO$$$", id="bad-base64"),
    pytest.param("data:image/png;base64,iVBORw0K GgoAAAANSUhEUg==", id="whitespace-in-base64"),
    pytest.param("data:image/png;base64,iVBORw0KGgo", id="bad-padding"),
    pytest.param("data:image/png;base64,é", id="non-ascii"),
    pytest.param(data_url(b"%PDF-1.7", "application/pdf"), id="declared-not-an-image"),
    pytest.param(data_url(b"%PDF-1.7", "image/png"), id="declared-png-but-pdf"),
    pytest.param(data_url(png_header_only(100_000, 100_000)), id="bomb-declared-huge"),
    pytest.param(data_url(png_header_only(8193, 1)), id="one-side-too-long"),
    pytest.param(data_url(png_header_only(4097, 4096)), id="too-many-pixels"),
])
def test_a_url_that_is_not_a_readable_image_in_bounds_is_a_400_naming_the_part(url: Any) -> None:
    assert url_refusal(url).status == 400


def test_the_pixel_bounds_are_inclusive() -> None:
    checked_data_url(data_url(png_header_only(images.MAX_IMAGE_SIDE, 2048)), "p", ImageBudget())
    checked_data_url(data_url(png_header_only(4096, 4096)), "p", ImageBudget())


def test_the_media_type_sent_on_is_the_one_the_bytes_show() -> None:
    url, image = checked_data_url(data_url(gif(2, 2), "image/png"), "p", ImageBudget())
    assert url.startswith("data:image/gif;base64,") and image.media_type == "image/gif"
    as_sent = data_url(png(2, 2))
    assert checked_data_url(as_sent, "p", ImageBudget())[0] is as_sent  # already right: not copied


def padded_png(size: int) -> bytes:
    """A PNG of exactly `size` bytes (a valid header, then padding a header reader ignores)."""
    head = png(1, 1)
    return head + b"\x00" * (size - len(head))


def test_an_image_of_exactly_the_byte_bound_is_taken_and_one_byte_more_is_a_413() -> None:
    checked_data_url(data_url(padded_png(images.MAX_IMAGE_BYTES)), "p", ImageBudget())
    refusal = url_refusal(data_url(padded_png(images.MAX_IMAGE_BYTES + 1)))
    assert refusal.status == 413


def test_a_requests_images_share_a_count_and_a_byte_bound_and_the_part_past_it_is_named() -> None:
    budget = ImageBudget()
    for index in range(images.MAX_IMAGES):
        checked_data_url(data_url(png(1, 1)), f"part{index}", budget)
    assert budget.first == "part0"
    assert url_refusal(data_url(png(1, 1)), budget).status == 400
    budget = ImageBudget()
    big = data_url(padded_png(images.MAX_REQUEST_IMAGE_BYTES // 2))
    checked_data_url(big, "a", budget)
    checked_data_url(big, "b", budget)
    assert url_refusal(data_url(png(1, 1)), budget).status == 413


def user_parts(*parts: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(parts)}


TEXT = {"type": "text", "text": "what is this?"}


def refusal_of(validate: Any, body: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as refused:
        validate(body, CONFIG)
    return refused.value


def test_an_image_turn_naming_no_model_goes_to_vision_model_then_the_models_that_see() -> None:
    turn = validate_chat({"messages": [user_parts(TEXT, image_part(png(3, 2)))]}, CONFIG)
    assert turn.models == (VISION_MODEL, "@cf/qwen/qwen3.8-27b")
    assert turn.messages[0]["content"] == [TEXT, {"type": "image_url", "image_url": {"url": data_url(png(3, 2))}}]
    text_turn = validate_chat({"messages": [{"role": "user", "content": "hi"}]}, CONFIG)
    assert text_turn.models == ()  # MODEL's own order: images change nothing for a text turn


def test_a_named_model_without_vision_is_a_400_naming_the_first_image() -> None:
    body = {"model": TEXT_MODEL, "messages": [user_parts(TEXT, image_part(png(3, 2)))]}
    for validate in (validate_chat, validate_completion):
        refusal = refusal_of(validate, body)
        assert (refusal.status, refusal.param) == (400, "messages[0].content[1]")
        assert refusal.message == f"messages[0].content[1]: {TEXT_MODEL} does not take images."


def test_vision_model_is_served_by_name_and_listed() -> None:
    body = {"model": VISION_MODEL, "messages": [user_parts(image_part(gif(1, 1)))]}
    assert validate_completion(body, CONFIG).turn.models[0] == VISION_MODEL
    assert [entry["id"] for entry in model_list(CONFIG)["data"]] == [TEXT_MODEL, "@cf/qwen/qwen3.8-27b", VISION_MODEL]


def test_without_a_vision_model_an_image_turn_goes_to_the_models_that_see_or_is_refused() -> None:
    seeing = Config(model=TEXT_MODEL, fallback_models=(VISION_MODEL,))
    assert validate_chat({"messages": [user_parts(image_part(png(1, 1)))]}, seeing).models == (VISION_MODEL,)
    blind = Config(model=TEXT_MODEL)
    with pytest.raises(ApiError) as refused:
        validate_chat({"messages": [user_parts(image_part(png(1, 1)))]}, blind)
    assert refused.value.message == "messages[0].content[0]: none of the models this Worker serves takes images."


def test_vision_model_must_be_a_model_that_sees() -> None:
    with pytest.raises(ConfigError, match="VISION_MODEL"):
        Config.from_env({"MODEL": TEXT_MODEL, "VISION_MODEL": TEXT_MODEL}.get)
    with pytest.raises(ConfigError, match="VISION_MODEL"):
        Config.from_env({"MODEL": TEXT_MODEL, "VISION_MODEL": "@cf/unum/uform-gen2-qwen-500m"}.get)
    assert Config.from_env({"MODEL": TEXT_MODEL, "VISION_MODEL": ""}.get).vision_model is None


@pytest.mark.parametrize(("message", "field"), [
    pytest.param({"role": "assistant", "content": [image_part(png(1, 1))]}, "messages[0].content[0]", id="assistant-image"),
    pytest.param({"role": "system", "content": [image_part(png(1, 1))]}, "messages[0].content[0]", id="system-image"),
    pytest.param(user_parts({"type": "image_url", "image_url": "data:,"}), "messages[0].content[0]", id="image-url-not-an-object"),
    pytest.param(user_parts({"type": "input_image", "image_url": data_url(png(1, 1))}), "messages[0].content[0]", id="responses-shape"),
    pytest.param(user_parts({"type": "image_url", "image_url": {"url": data_url(png(1, 1)), "detail": "max"}}),
                 "messages[0].content[0].image_url.detail", id="unknown-detail"),
    pytest.param(user_parts({"type": "text", "text": "  "}), "messages[0].content", id="only-blank-text"),
    pytest.param(user_parts(), "messages[0].content", id="no-parts"),
])
def test_parts_the_worker_cannot_send_are_400s_naming_them(message: dict[str, Any], field: str) -> None:
    body = {"model": VISION_MODEL, "messages": [message, {"role": "user", "content": "hi"}]}
    assert refusal_of(validate_completion, body).param == field


def test_text_parts_alone_are_sent_as_text_and_count_towards_the_input_bound() -> None:
    turn = validate_chat({"messages": [user_parts(TEXT, {"type": "text", "text": "and this"})]}, CONFIG)
    assert turn.messages[0]["content"] == "what is this?\nand this"
    small = Config(model=VISION_MODEL, max_input_chars=20)
    with pytest.raises(ApiError, match="total 21 characters"):
        validate_chat({"messages": [user_parts({"type": "text", "text": "x" * 21}, image_part(png(1, 1)))]}, small)
    validate_chat({"messages": [user_parts({"type": "text", "text": "x" * 20}, image_part(png(1, 1)))]}, small)


def ui_file(data: bytes, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "file", "mediaType": media_type, "filename": "x", "url": data_url(data, media_type or "image/png")}


def test_a_use_chat_file_part_becomes_an_image_and_its_refusal_names_the_ui_part() -> None:
    body = {"messages": [{"role": "user", "parts": [ui_file(png(3, 2)), {"type": "text", "text": "what?"}]}]}
    turn = validate_ui_chat(body, CONFIG)
    assert turn.models[0] == VISION_MODEL
    assert turn.messages[0]["content"] == [{"type": "image_url", "image_url": {"url": data_url(png(3, 2))}},
                                           {"type": "text", "text": "what?"}]
    assert validate_ui_chat({"messages": [{"role": "user", "parts": [ui_file(png(1, 1), "")]}]}, CONFIG).messages[0]["content"][0]
    history = {"messages": [{"role": "user", "parts": [{"type": "text", "text": "hi"}]},
                            {"role": "assistant", "parts": [{"type": "text", "text": "hello"}]},
                            {"role": "user", "parts": [{"type": "text", "text": "see"}, ui_file(b"not an image")]}]}
    assert refusal_of(validate_ui_chat, history).param == "messages[2].parts[1]"


@pytest.mark.parametrize(("parts", "field"), [
    pytest.param([ui_file(b"%PDF-1.7", "application/pdf"), {"type": "text", "text": "read this"}], "messages[0].parts[0]", id="pdf"),
    pytest.param([{"type": "text", "text": "hi"}, {"type": "file", "mediaType": 5, "url": "data:,"}], "messages[0].parts[1]",
                 id="media-type-not-a-string"),
    pytest.param([{"type": "file", "mediaType": "image/png", "url": "https://example.com/a.png"}], "messages[0].parts[0]",
                 id="hosted-file"),
])
def test_a_file_part_that_is_not_an_image_is_a_400_naming_it_never_dropped(parts: list[Any], field: str) -> None:
    refusal = refusal_of(validate_ui_chat, {"messages": [{"role": "user", "parts": parts}]})
    assert (refusal.status, refusal.param) == (400, field)


def test_a_file_part_in_an_assistant_message_is_refused() -> None:
    body = {"messages": [{"role": "user", "parts": [{"type": "text", "text": "hi"}]},
                         {"role": "assistant", "parts": [ui_file(png(1, 1))]}, {"role": "user", "parts": [{"type": "text", "text": "ok"}]}]}
    assert refusal_of(validate_ui_chat, body).param == "messages[1].parts[0]"


def test_a_bodys_data_urls_are_set_apart_as_ascii_and_come_back_in_place() -> None:
    image = data_url(padded_png(10_000) + bytes(range(256)) * 4)  # every base64 character, "/" and "+" among them
    assert "/" in image[30:] and "+" in image[30:]
    payload = {"messages": [user_parts({"type": "text", "text": 'fine \U0001f600 "data:image/png;base64,' + "A" * 100 + '"'},
                                       {"type": "image_url", "image_url": {"url": image}})], "other": image}
    for body in (json.dumps(payload, ensure_ascii=False).encode(), json.dumps(payload).replace("/", "\\/").encode()):
        split = split_body(body, 65536)
        assert len(split.rest) < 1_000 and len(split.urls) == 2  # the one inside the text is text, left alone
        assert all(url.isascii() for url in split.urls.values())
        assert split.restored(json.loads(split.rest)) == (payload, len(image))  # the one image_url's, not "other"'s
        assert split.beside_images(len(body), [image]) == len(body) - len(image) - split.escapes
    assert split.escapes > 0


def test_no_client_can_write_a_placeholder_of_its_own() -> None:
    image = data_url(padded_png(1_000))
    first = split_body(json.dumps({"url": image}).encode(), 65536)
    [placeholder] = first.urls
    again = split_body(json.dumps({"url": image, "forged": placeholder}).encode(), 65536)
    assert again.restored(json.loads(again.rest))[0]["forged"] == placeholder  # another request's is just text


def test_a_body_without_data_urls_is_its_own_rest() -> None:
    body = json.dumps({"messages": [{"role": "user", "content": "data:image/png;base64,AAAA"}]}).encode()
    assert split_body(body, 65536).rest is body


def test_image_bytes_never_reach_a_refusal() -> None:
    secret = base64.b64encode(b"\x89PNG\r\n\x1a\nSECRET-BYTES-HERE").decode()
    refusal = url_refusal(f"data:image/png;base64,{secret}")
    assert secret[:12] not in refusal.message and "SECRET" not in refusal.message


def test_a_jpeg_whose_frame_header_lies_past_the_first_decoded_bytes_is_read_whole() -> None:
    # Ten APP segments of 64 KiB (EXIF, ICC, thumbnails) before the frame header.
    metadata = (b"\xff\xe2\xff\xff" + b"\x00" * 65533) * 10
    data = b"\xff\xd8" + metadata + jpeg_header(3000, 2000)[2:]
    assert checked_data_url(data_url(data, "image/jpeg"), "p", ImageBudget())[1].describe() == "a 3000\u00d72000 JPEG"
    assert url_refusal(data_url(data[:200_000], "image/jpeg")).message.endswith("the image's header is cut short.")


@pytest.mark.parametrize("data", [
    pytest.param(webp_lossy(4, 4)[:23] + b"\x00\x00\x00" + webp_lossy(4, 4)[26:], id="vp8-without-its-start-code"),
    pytest.param(webp_lossless(4, 4)[:20] + b"\x00" + webp_lossless(4, 4)[21:], id="vp8l-without-its-signature"),
])
def test_a_webp_whose_frame_header_is_malformed_is_refused(data: bytes) -> None:
    with pytest.raises(ImageError, match="malformed"):
        read_image(data)


def test_the_images_of_checked_messages_are_listed_in_order() -> None:
    turn = validate_chat({"messages": [user_parts(image_part(png(1, 1))), {"role": "assistant", "content": "ok"},
                                       user_parts(TEXT, image_part(gif(1, 1)))]}, CONFIG)
    assert list(images.urls_in(turn.messages)) == [data_url(png(1, 1)), data_url(gif(1, 1), "image/gif")]


def test_a_data_url_with_another_escape_stays_in_the_rest_and_a_body_without_any_restores_nothing() -> None:
    escaped = '{"url": "data:image/png;base64,' + "A" * 100 + '\\u0041"}'
    split = split_body(escaped.encode(), 65536)
    assert not split.urls and split.restored(json.loads(split.rest)) == (json.loads(escaped), 0)


def test_an_image_turns_prompt_cache_key_does_not_serialise_its_image_but_tells_images_apart() -> None:
    from chat.model.call import session_key

    def key(image: bytes) -> str:
        return session_key(validate_chat({"messages": [user_parts(TEXT, image_part(image))]}, CONFIG), "client")

    assert key(png(3, 2)) == key(png(3, 2)) != key(gif(1, 1))
    assert key(padded_png(1000)) != key(padded_png(1003))  # the same start, another length
    assert key(padded_png(1000)) != key(padded_png(1001))  # and the same length, another end


@pytest.mark.parametrize("body", [
    pytest.param('{"text": "data:caf\u00e9;base64,' + "A" * 80 + '"}', id="non-ascii-header"),
    pytest.param('{"properties": {"data:image/png;base64,' + "A" * 80 + '": {"type": "string"}}}', id="a-key"),
    pytest.param('{"properties": {"data:image/png;base64,' + "A" * 80 + '"  \n :1}}', id="a-key-before-whitespace"),
])
def test_what_is_not_an_ascii_data_url_string_value_stays_in_the_rest_unchanged(body: str) -> None:
    split = split_body(body.encode(), 65536)
    assert not split.urls and split.rest == body.encode()


def test_the_rest_is_bounded_while_it_is_cut() -> None:
    tiny = '"data:;base64,' + "A" * 64 + '"'
    body = ("[" + ",".join([tiny] * 20_000) + "]").encode()  # 1.6 MB of data URLs; their placeholders alone pass 64 KiB
    with pytest.raises(BodyTooLarge):
        split_body(body, 65536)
    with pytest.raises(BodyTooLarge):
        split_body(b"[" + b" " * 65536 + b"]", 65536)
    assert len(split_body(b"[" + b" " * 65534 + b"]", 65536).rest) == 65536


def test_data_urls_count_as_images_only_where_a_route_reads_an_image() -> None:
    url = data_url(padded_png(1000))
    value = {"messages": [{"content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": url}]},
                          {"parts": [{"type": "file", "url": url}, {"type": "text", "url": url}]}]}
    split = split_body(json.dumps(value).encode(), 65536)
    assert len(split.urls) == 4 and split.restored(json.loads(split.rest)) == (value, 2 * len(url))
    responses = {"input": [{"content": [{"type": "input_image", "image_url": url}, {"type": "input_text", "image_url": url}]}]}
    split = split_body(json.dumps(responses).encode(), 65536)
    assert split.restored(json.loads(split.rest)) == (responses, len(url))  # OpenAI Responses' input_image part
