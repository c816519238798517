"""Random padding for delta frames: TLS hides content but not sizes, and a frame's size
would otherwise give away the length of the token it carries."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from itertools import chain

__all__ = ["DEFAULT_MAX_PADDING", "MAX_PADDING", "paddings"]

DEFAULT_MAX_PADDING = 32
# Padding lengths are drawn one random byte each, which bounds them.
MAX_PADDING = 255

# What padding is made of does not matter, only its length: the stream is sent with
# `content-encoding: identity` and `no-transform`, so nothing compresses it away. Letters
# and digits need no JSON escaping, which lets encoders embed padding as it is.
_FILL = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" * 5

# Random bytes drawn per batch of paddings; one draw serves about 256 frames.
_RANDOM_BYTES_PER_REFILL = 256


def _length_tables(max_padding: int) -> tuple[bytes, bytes]:
    """A bytes.translate table mapping a random byte to a padding length, and the bytes
    to delete first. Deleting the bytes at or above the largest multiple of the number
    of lengths (rejection sampling) keeps every length exactly equally likely."""
    choices = max_padding + 1
    limit = 256 - 256 % choices
    table = bytes(b % choices if b < limit else 0 for b in range(256))
    return table, bytes(range(limit, 256))


_DEFAULT_LENGTH_TABLES = _length_tables(DEFAULT_MAX_PADDING)


def paddings(max_padding: int, rng: random.Random | None = None) -> Iterator[str]:
    """An endless iterator of paddings whose lengths are uniform in [0, max_padding].

    Drawn a batch at a time, so a frame costs one C-level next(), not a random call, and
    zip() can take a whole run at once. `rng` is for deterministic tests; by default the
    lengths come from os.urandom. Raises ValueError if max_padding is outside [0, 255].
    """
    if not 0 <= max_padding <= MAX_PADDING:
        raise ValueError(f"max_padding must be in [0, {MAX_PADDING}]")
    random_bytes: Callable[[int], bytes] = rng.randbytes if rng is not None else os.urandom
    pieces = [_FILL[:n] for n in range(max_padding + 1)]
    table, rejected = (
        _DEFAULT_LENGTH_TABLES if max_padding == DEFAULT_MAX_PADDING else _length_tables(max_padding)
    )

    def batch() -> list[str]:
        lengths = random_bytes(_RANDOM_BYTES_PER_REFILL).translate(table, rejected)
        # Each byte is rejected with a chance under one half, so an empty batch is all
        # but impossible; it must still not end the iterator.
        return list(map(pieces.__getitem__, lengths)) or [pieces[0]]

    return chain.from_iterable(iter(batch, None))
