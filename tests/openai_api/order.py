"""The structured output the structured-outputs tests ask for, shared with the instructor
script (tests/openai_api/read_with_instructor.py), which runs in a venv of its own."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class Item(BaseModel):
    name: str
    quantity: int


class Order(BaseModel):
    id: str
    items: list[Item]
    status: Literal["open", "shipped"]
