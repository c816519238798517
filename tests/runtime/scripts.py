"""Temporary: replaced by the shared script builder."""
from __future__ import annotations
import json
from typing import Any

DONE = {"send": "data: [DONE]\n\n"}

def native(text: str, *, repeat: int | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"send": "data: " + json.dumps({"response": text, "p": "pp"}) + "\n\n"}
    if repeat is not None:
        step["repeat"] = repeat
    return step

def comment(text: str) -> dict[str, Any]:
    return {"send": f": {text}\n"}

def blank_lines(n: int) -> dict[str, Any]:
    return {"send": "\n" * n}

def sleep(ms: int) -> dict[str, Any]:
    return {"sleep_ms": ms}

def error(message: str) -> dict[str, Any]:
    return {"error": message}

def hang() -> dict[str, Any]:
    return {"hang": True}

def prompts(table):
    return {"prompts": {k: {"steps": v} for k, v in table.items()}, "steps": []}
