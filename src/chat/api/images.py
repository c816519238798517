"""Images in a chat turn (issue 30): a client's image, checked before any inference and
handed on as the binding's content part. Pure Python, no I/O.

An image arrives as a data URL (`data:image/png;base64,...`): in an OpenAI `image_url`
part on /v1 and /api/chat, in an AI SDK `file` part on /api/ui-chat. Its media type is
read from its bytes, never from the URL or the part, and so are its pixel dimensions
(from the header only: nothing is decoded). A URL of any other scheme is refused: fetching
it would be a request from the Worker that a client steers (to any host, of any size, as
slow as it likes), so the client sends the bytes itself (docs/images.md).

Every bound is checked where the part is read, and a refusal names the part: 413
`payload_too_large` for bytes, 400 `invalid_request` for the rest. A client's URL is never
echoed, and no image byte reaches a log.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from chat.web.errors import ApiError, invalid_request

# The formats the vision models' inputs take (docs/images.md, "Formats"), by their
# signatures; the name is what a refusal calls the format.
MEDIA_TYPES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WebP", "image/gif": "GIF"}
FORMATS_NAMED = "PNG, JPEG, WebP or GIF"

# The bounds, and why (docs/images.md, "Bounds"):
# - bytes per image: a 12-megapixel phone photo is 2 to 5 MB as JPEG; more buys the model
#   nothing (each model scales an image down to its own input size) and costs the isolate
#   its memory (a request's image bytes are held about twice while it is read, as the body
#   and as its data URL's text, and again in the call sent on: docs/images.md, "Memory").
MAX_IMAGE_BYTES = 5 * 1024 * 1024
# - bytes per request: what the isolate's 128 MB holds beside Pyodide (about 30 MB) and
#   every stream in flight, with the copies a request still makes (docs/images.md,
#   "Memory": measured in workerd, the largest request raised Pyodide's heap by 13 MiB on
#   /v1 and 45 MiB on a resumable answer at worst; 8 MiB raised them by 18 and 53).
MAX_REQUEST_IMAGE_BYTES = 6 * 1024 * 1024
# - images per request: several pages of a document or a few photos side by side; each
#   image costs the model hundreds of prompt tokens, so this keeps a turn within every
#   vision model's context.
MAX_IMAGES = 8
# - pixels: no model page states a limit, and each model scales down what it gets; the
#   model's decoder is what pays for pixels, and a small file can declare huge ones (a
#   "decompression bomb"). 8192 px a side, 4096 x 4096 in all, passes any camera's photo.
MAX_IMAGE_SIDE = 8192
MAX_IMAGE_PIXELS = 4096 * 4096
# The most JPEG segments read before its frame header: real files have a few dozen
# (EXIF, ICC, thumbnails), and a hostile one must not cost a loop over megabytes.
_MAX_JPEG_SEGMENTS = 1000

# How much base64 text a request may carry in all: its image bytes, written out (4 characters for
# every 3 bytes). A route that takes images reads this much past MAX_BODY_BYTES.
MAX_IMAGE_TEXT_BYTES = -(-MAX_REQUEST_IMAGE_BYTES // 3) * 4


class ImageError(ValueError):
    """Bytes that are not an image this Worker takes; the message says why, without them."""


class HeaderCutShort(ImageError):
    def __init__(self) -> None:
        super().__init__("the image's header is cut short.")


@dataclass(frozen=True, kw_only=True, slots=True)
class Image:
    """What the Worker knows of an image: read from its bytes."""

    media_type: str
    width: int
    height: int
    size: int  # bytes

    def describe(self) -> str:
        return f"a {self.width}\u00d7{self.height} {MEDIA_TYPES[self.media_type]}"


class ImageBudget:
    """The bounds a request's images share: counted part by part, so the refusal names the
    part that went past one. `first`: the name of the request's first image (None: it has
    none), which a model that cannot take images is refused on."""

    def __init__(self) -> None:
        self.count = 0
        self.size = 0
        self.first: str | None = None

    def spend(self, image: Image, where: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = where
        if self.count > MAX_IMAGES:
            raise invalid_request(f"{where}: a request may carry at most {MAX_IMAGES} images.", param=where)
        self.size += image.size
        if self.size > MAX_REQUEST_IMAGE_BYTES:
            raise ApiError("payload_too_large", f"{where}: the request's images total more than {MAX_REQUEST_IMAGE_BYTES} bytes.",
                           param=where)


def checked_data_url(url: Any, where: str, budget: ImageBudget) -> tuple[str, Image]:
    """The data URL to send the model (its media type the one its bytes show) and what the
    image is. Raises ApiError naming `where`: 413 past a byte bound, else 400."""
    if not isinstance(url, str):
        raise invalid_request(f"{where} must be a string: a data URL of the image.", param=where)
    if not url.startswith("data:"):
        raise invalid_request(f"{where}: send the image itself as a data URL (data:image/png;base64,...); "
                              "this Worker fetches no URL.", param=where)
    header, comma, text = url.partition(",")
    if not comma or not header.lower().endswith(";base64"):
        raise invalid_request(f"{where}: a data URL of an image must be base64 (data:image/png;base64,...).", param=where)
    declared = header[len("data:"):-len(";base64")].split(";", 1)[0].strip().lower()
    if declared and not declared.startswith("image/"):
        raise invalid_request(f"{where}: only images are taken here ({FORMATS_NAMED}).", param=where)
    # Sized and checked on the text, and only the header decoded: the image's bytes are
    # never held twice over in the isolate's memory (docs/images.md, "Memory").
    if len(text) % 4 or not _BASE64.fullmatch(text):
        raise invalid_request(f"{where}: the data URL is not valid base64.", param=where)
    size = len(text) // 4 * 3 - (2 if text.endswith("==") else 1 if text.endswith("=") else 0)  # rstrip would copy it
    if size > MAX_IMAGE_BYTES:
        raise ApiError("payload_too_large", f"{where}: an image may be at most {MAX_IMAGE_BYTES} bytes.", param=where)
    try:
        try:
            image = read_image(_decoded(text[:_HEADER_CHARS]), size=size)
        except HeaderCutShort:
            if len(text) <= _HEADER_CHARS:
                raise
            # A header further in than most (a JPEG's frame after large metadata): read it all.
            image = read_image(_decoded(text), size=size)
    except ImageError as problem:
        raise invalid_request(f"{where}: {problem}", param=where) from None
    if image.width > MAX_IMAGE_SIDE or image.height > MAX_IMAGE_SIDE or image.width * image.height > MAX_IMAGE_PIXELS:
        raise invalid_request(f"{where}: the image is {image.width}\u00d7{image.height} pixels; at most {MAX_IMAGE_SIDE} a side "
                              f"and {MAX_IMAGE_PIXELS} in all are taken.", param=where)
    budget.spend(image, where)
    if header != f"data:{image.media_type};base64":  # sent on as the binding's schemas write it
        url = f"data:{image.media_type};base64,{text}"
    return url, image


# Standard base64 (RFC 4648, section 4), padded: what a browser's FileReader and every
# SDK write. Matched without copying the text.
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
# How much of the base64 text is decoded to read a header: 192 KiB of image, past the
# metadata (EXIF, ICC, thumbnails) a JPEG may put before its frame header.
_HEADER_CHARS = 256 * 1024


def _decoded(text: str) -> bytes:
    return binascii.a2b_base64(text, strict_mode=True)


def urls_in(messages: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """The data URLs of the images in checked messages (chat.turn's shape)."""
    for message in messages:
        content = message["content"]
        if not isinstance(content, str):
            yield from (part["image_url"]["url"] for part in content if part["type"] == "image_url")


def read_image(data: bytes, *, size: int | None = None) -> Image:
    """The format and pixel size in an image's header (`data`: the image, or its first
    bytes, when `size` gives the whole image's). Raises ImageError for bytes that are none
    of MEDIA_TYPES, or whose header is cut short or declares no pixels."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        width, height = _png_size(data)
        media_type = "image/png"
    elif data.startswith(b"\xff\xd8\xff"):
        width, height = _jpeg_size(data)
        media_type = "image/jpeg"
    elif data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        width, height = _webp_size(data)
        media_type = "image/webp"
    elif data[:6] in (b"GIF87a", b"GIF89a"):
        width, height = _uint(data, 6, 2, "little"), _uint(data, 8, 2, "little")
        media_type = "image/gif"
    else:
        raise ImageError(f"the bytes are not a {FORMATS_NAMED} image.")
    if width == 0 or height == 0:
        raise ImageError(f"the {MEDIA_TYPES[media_type]} header declares no pixels.")
    return Image(media_type=media_type, width=width, height=height, size=len(data) if size is None else size)


def _uint(data: bytes, at: int, size: int, order: Literal["big", "little"]) -> int:
    if len(data) < at + size:
        raise HeaderCutShort
    return int.from_bytes(data[at:at + size], order)


def _png_size(data: bytes) -> tuple[int, int]:
    # The first chunk is IHDR (PNG 3rd edition, 5.6): width and height, 4 bytes each, big-endian.
    if data[12:16] != b"IHDR":
        raise ImageError("the PNG's first chunk is not its header.") if len(data) >= 16 else HeaderCutShort
    return _uint(data, 16, 4, "big"), _uint(data, 20, 4, "big")


# Start-of-frame markers (ITU T.81, B.1.1.3): SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC).
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})  # TEM and RSTn: no length
_FILL = re.compile(rb"\xff*")


def _jpeg_size(data: bytes) -> tuple[int, int]:
    at = 2
    for _ in range(_MAX_JPEG_SEGMENTS):
        if at + 2 > len(data):
            break
        if data[at] != 0xFF:
            raise ImageError("the JPEG's segments are malformed.")
        fill = _FILL.match(data, at + 1)  # fill bytes before a marker (B.1.1.2): not segments
        at = (fill.end() if fill else at + 1) - 1
        if at + 2 > len(data):
            break
        marker = data[at + 1]
        if marker in _JPEG_STANDALONE:
            at += 2
            continue
        if marker in (0xD9, 0xDA):  # the end, or the scan, before any frame header
            raise ImageError("the JPEG has no frame header before its image data.")
        length = _uint(data, at + 2, 2, "big")
        if length < 2:
            raise ImageError("the JPEG's segments are malformed.")
        if marker in _JPEG_FRAMES:
            # Lf (2), P (1), Y lines (2), X samples per line (2).
            return _uint(data, at + 7, 2, "big"), _uint(data, at + 5, 2, "big")
        at += 2 + length
    else:
        raise ImageError(f"the JPEG has no frame header within its first {_MAX_JPEG_SEGMENTS} segments.")
    raise HeaderCutShort


def _webp_size(data: bytes) -> tuple[int, int]:
    # RFC 9649: the first chunk after "WEBP" is VP8 (lossy), VP8L (lossless) or VP8X (extended).
    chunk = data[12:16]
    if chunk == b"VP8 ":
        if data[23:26] != b"\x9d\x01\x2a":
            raise ImageError("the WebP's VP8 frame header is malformed.") if len(data) >= 26 else HeaderCutShort
        return _uint(data, 26, 2, "little") & 0x3FFF, _uint(data, 28, 2, "little") & 0x3FFF
    if chunk == b"VP8L":
        if len(data) >= 21 and data[20] != 0x2F:
            raise ImageError("the WebP's VP8L header is malformed.")
        bits = _uint(data, 21, 4, "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return _uint(data, 24, 3, "little") + 1, _uint(data, 27, 3, "little") + 1
    raise ImageError("the WebP's first chunk is not VP8, VP8L or VP8X.") if len(data) >= 16 else HeaderCutShort
