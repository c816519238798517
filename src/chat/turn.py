"""A chat turn as every surface hands it on, once checked: the one typed home of a request.

Each API surface (chat.api) parses its own body into a ChatTurn; the model layer
(chat.model) and the streams read nothing else. Depends on nothing of this package, so any
layer may import it. Pure Python, JSON-ready values throughout: a resumable answer's
Durable Object receives the model call made of it as it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

__all__ = ["ChatTurn", "ContentPart", "ImagePart", "Message", "OutputFormat", "OutputKind", "TextPart", "ToolCall"]


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class ImageUrl(TypedDict):
    url: str  # a data URL whose media type its bytes show (chat.api.images)


class ImagePart(TypedDict):
    """An image, in the binding's (and OpenAI's) shape: only in a user message."""

    type: Literal["image_url"]
    image_url: ImageUrl


ContentPart = TextPart | ImagePart


class ToolCallFunction(TypedDict):
    name: str
    arguments: str  # JSON text, as OpenAI sends it


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: ToolCallFunction


class Message(TypedDict):
    """A message in the binding's shape: `content` is text (an assistant message with only
    calls has ""), or a user message's list of text and image parts when it carries
    images; an assistant message may carry `tool_calls`, a tool message answers one with
    `tool_call_id` and `name`."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[ContentPart]
    tool_calls: NotRequired[list[ToolCall]]
    tool_call_id: NotRequired[str]
    name: NotRequired[str]


OutputKind = Literal["text", "json_object", "json_schema"]


@dataclass(frozen=True, kw_only=True, slots=True)
class OutputFormat:
    """What the answer must be (OpenAI's `response_format`): `json_object`, any JSON object;
    `json_schema`, JSON following `schema` (the client's, already checked by
    chat.output.schema), which `strict` makes the Worker enforce as well as ask for."""

    kind: OutputKind
    name: str | None = None
    schema: Mapping[str, Any] | None = None
    strict: bool = False
    description: str | None = None

    def as_order(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "schema": self.schema, "strict": self.strict, "description": self.description}

    @classmethod
    def from_order(cls, order: Mapping[str, Any] | None) -> OutputFormat | None:
        if order is None:
            return None
        return cls(kind=order["kind"], name=order.get("name"), schema=order.get("schema"), strict=bool(order.get("strict")),
                   description=order.get("description"))


@dataclass(frozen=True, kw_only=True)
class ChatTurn:
    """A checked conversation and its generation settings. `options` are further model
    inputs, already checked (top_p, seed, penalties from the OpenAI route); `tool_inputs` the
    request's tools (chat.api.tools), empty when it offers none; `output` what the answer
    must be (None: text)."""

    messages: tuple[Message, ...]
    max_tokens: int
    temperature: float | None
    options: tuple[tuple[str, float | int], ...] = ()
    resumable: bool = False  # produced by a Durable Object that readers can come back to
    chat_id: str | None = None  # the AI SDK's chat id (/api/ui-chat), when the client sent one
    # /api/ui-chat: the id of the assistant message this answer continues (the conversation
    # ends with it, as after a tool's result), so the answer's parts are appended to it.
    continues_message: str | None = None
    models: tuple[str, ...] = ()  # the client's choice of model first, then the others; (): MODEL's order
    reasoning_effort: str | None = None  # one of catalog.EFFORTS; None: the model's default
    skip_cache: bool = False  # the client asked the AI Gateway not to answer from its cache
    tool_inputs: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # tools, tool_choice, parallel_tool_calls
    output: OutputFormat | None = None
    stop: tuple[str, ...] = ()  # stop sequences (the Worker ends the answer before the first)
    cache_key: str | None = None  # the client's prompt-caching key (/v1/responses' prompt_cache_key)

    def model_inputs(self, system_prompt: str) -> dict[str, Any]:
        """The inputs every model gets; what differs per model (sampling ranges, reasoning,
        the output format's shape) is chat.model.call's."""
        # The server's prompt comes first, so a client's own system messages (where a
        # route accepts them) follow it and cannot come before it.
        messages: list[dict[str, Any]] = [dict(m) for m in self.messages]
        if system_prompt:
            messages.insert(0, {"role": "system", "content": system_prompt})
        inputs: dict[str, Any] = {"messages": messages, "stream": True, "max_tokens": self.max_tokens}
        if self.temperature is not None:
            inputs["temperature"] = self.temperature
        inputs.update(self.options)
        inputs.update(self.tool_inputs)
        return inputs
