"""Small real image files built in tests, and hostile ones: what a client may attach
(issue 30). Every builder writes a file a decoder reads, unless its name says otherwise."""

from __future__ import annotations

import base64
import struct
import zlib


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, *, rows: bytes | None = None) -> bytes:
    """An 8-bit RGB PNG of `width` x `height` grey pixels (`rows`: the raw scanlines instead)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    raw = rows if rows is not None else (b"\x00" + b"\x80" * (3 * width)) * height
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(raw, 9)) + _png_chunk(b"IEND", b"")


def png_header_only(width: int, height: int) -> bytes:
    """A PNG's signature and header chunk declaring `width` x `height`, and nothing else:
    what a "decompression bomb" looks like to a reader of headers."""
    return png(1, 1)[:8] + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))


def gif(width: int, height: int) -> bytes:
    """A one-colour GIF89a (a single black pixel's image data, scaled by the screen size)."""
    screen = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    return screen + image + b"\x3b"


def jpeg_header(width: int, height: int, *, app_segments: int = 1) -> bytes:
    """A JPEG's markers up to and through a baseline frame header (SOF0) of `width` x
    `height`, after `app_segments` APP1 segments: what a header reader sees, not a picture."""
    app = b"\xff\xe1" + struct.pack(">H", 2 + 14) + b"Exif\x00\x00" + b"\x00" * 8
    frame = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app * app_segments + frame + b"\xff\xd9"


def webp_lossless(width: int, height: int) -> bytes:
    """A WebP's RIFF header and VP8L chunk header of `width` x `height` (header only)."""
    bits = (width - 1) | ((height - 1) << 14)
    chunk = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + struct.pack("<I", bits)
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def webp_extended(width: int, height: int) -> bytes:
    chunk = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def webp_lossy(width: int, height: int) -> bytes:
    frame = b"\x00\x00\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height)
    chunk = b"VP8 " + struct.pack("<I", len(frame)) + frame
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def data_url(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def image_part(data: bytes, media_type: str = "image/png") -> dict[str, object]:
    """An OpenAI content part carrying `data`."""
    return {"type": "image_url", "image_url": {"url": data_url(data, media_type)}}
