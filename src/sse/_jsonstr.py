"""JSON string helpers shared by the normalizer and the encoders."""

from __future__ import annotations

import json.decoder
from collections.abc import Callable

__all__ = ["scan_body", "scanstring"]

# json.decoder.scanstring is the C string scanner behind json.loads (its pure-Python twin
# where the C module is missing): (text, end) for the string whose body starts at `end`.
# Typeshed does not list it, hence the ignore.
scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def scan_body(body: str) -> str:
    """The text a JSON string body (escapes included, quotes not) stands for."""
    return scanstring(body + '"', 0)[0]
