"""Structured logs: one JSON object a line, never message text or generated text."""

from __future__ import annotations

import json
from typing import Any


def line(event: str, **fields: Any) -> str:
    return json.dumps({"event": event, **fields}, separators=(",", ":"), default=str)


def log(event: str, **fields: Any) -> None:
    print(line(event, **fields))
