"""A chat route's JSON body, its images' data URLs set apart before the rest is decoded
(issue 30). Pure Python.

A body with images is megabytes of base64 beside a few KiB of text. Decoded whole, one
character above U+FFFF anywhere in it (an emoji in the question) makes Python store all of
it at four bytes a character: 8 MiB of images became 32 MiB of text in Pyodide's heap,
which never shrinks, and four such requests at once took it past 128 MB (the attack of
2026-12-02). So each data URL is cut out of the bytes first, as compact ASCII text, and
only the rest is decoded and parsed; the parsed value then gets its URLs back.

The rest is what MAX_BODY_BYTES bounds: while it is cut (so a body of a hundred thousand
tiny data URLs stops within the bound's worth of them), and once parsed, with every data
URL that is not where the route reads an image counted in (so no string of megabytes
reaches a check that would copy it, as a tool's schema or a join of text parts does).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# A JSON string value that is a base64 data URL of some length: its opening quote a
# delimiter (not escaped: inside a JSON string every quote is), ASCII throughout, and not
# an object's key (a key stays in the rest, where it is bounded). Single-character classes
# only: a repeated group with alternatives costs Python's regex engine memory for every
# character it repeats over (half a gigabyte for 8 MiB). A backslash may only be that of
# `\/`, the escape PHP's json_encode writes for every slash (checked after the match); a
# string with any other escape stays in the rest.
_DATA_URL = re.compile(rb'(?<!\\)"(data:[\x20\x21\x23-\x7e]{0,100}?;[Bb][Aa][Ss][Ee]64,[A-Za-z0-9+/=\\]{64,})"(?![ \t\r\n]*:)')


class BodyTooLarge(ValueError):
    """The body beside its images' data URLs is past the bound it was split with."""


@dataclass(frozen=True, kw_only=True)
class SplitBody:
    """`rest`: the body with a placeholder string for each data URL; `urls`: placeholder ->
    data URL, its `\\/` escapes undone; `escapes`: how many escapes were undone."""

    rest: bytes
    urls: Mapping[str, str] = field(default_factory=dict)
    escapes: int = 0

    def restored(self, value: Any) -> tuple[Any, int]:
        """`value` (the rest, parsed) with each placeholder replaced by its data URL, in
        place, without recursion (the parse bounds the depth, not the width); and the
        characters of the data URLs put back where a route reads an image: the `url` of an
        `image_url` object (OpenAI's part) or of a `file` part (the AI SDK's), or the
        `image_url` of an `input_image` part (OpenAI's Responses)."""
        if not self.urls:
            return value, 0
        at_images = 0
        stack: list[tuple[Any, Any]] = [(value, None)]
        while stack:
            node, name = stack.pop()
            entries: Iterable[tuple[Any, Any]] = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            for key, item in list(entries):
                if isinstance(item, str):
                    url = self.urls.get(item)
                    if url is not None:
                        node[key] = url
                        if (key == "url" and (name == "image_url" or node.get("type") == "file")) or (
                                key == "image_url" and node.get("type") == "input_image"):
                            at_images += len(url)
                elif isinstance(item, dict | list):
                    stack.append((item, key))
        return value, at_images

    def beside_images(self, size: int, image_urls: Iterable[str]) -> int:
        """The bytes of a `size`-byte body beside the data URLs that were read as images
        (`image_urls`: the checked turn's, as sent on, whose header may have been rewritten
        by a few characters): what MAX_BODY_BYTES holds."""
        return size - sum(len(url) for url in image_urls) - self.escapes


def split(data: bytes, limit: int) -> SplitBody:
    """`data` with its data URLs set apart (see the module's docstring). Raises BodyTooLarge
    as soon as the rest is past `limit` bytes."""
    pieces: list[bytes] = []
    urls: dict[str, str] = {}
    escapes = 0
    rest = 0
    nonce = ""
    view = memoryview(data)
    at = 0
    for match in _DATA_URL.finditer(data):
        # So that no client can write a placeholder of its own; os.urandom, not `secrets`,
        # whose imports (hmac, random) every isolate would pay for at start-up.
        nonce = nonce or os.urandom(8).hex()
        start, end = match.span(1)
        url = str(view[start:end], "ascii")  # straight into a compact str: no copy of the bytes first
        if "\\" in url:
            slashes = url.count("\\/")
            if url.count("\\") != slashes:
                continue  # another escape: JSON's to read, in the rest
            escapes += slashes
            url = url.replace("\\/", "/")
        placeholder = f"\u0000image-{len(urls)}-{nonce}"
        written = f'"\\u0000image-{len(urls)}-{nonce}"'.encode()
        urls[placeholder] = url
        pieces += [view[at:start - 1].tobytes(), written]
        rest += start - 1 - at + len(written)
        if rest > limit:
            raise BodyTooLarge
        at = end + 1
    if len(data) - at + rest > limit:
        raise BodyTooLarge
    if not urls:
        return SplitBody(rest=data)
    pieces.append(view[at:].tobytes())
    return SplitBody(rest=b"".join(pieces), urls=urls, escapes=escapes)
