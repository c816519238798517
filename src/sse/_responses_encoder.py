"""OpenAI's Responses API as one more encoding of the protocol (docs/openai.md, "The
Responses API"): the streamed events of `POST /v1/responses`, or, collected, the one
Response object of `stream: false`.

A stream is `response.created` and `response.in_progress`, then the output items in the
model's order, each opened by `response.output_item.added` and closed by
`response.output_item.done`, then exactly one terminal: `response.completed`,
`response.incomplete` (cut at the token budget or by a content filter) or, after an
`error` event, `response.failed`. Every event carries `sequence_number`, from 0.

The items: `reasoning`, `message` (one `output_text` part) and `function_call`. The open
models' reasoning is their raw thinking, so it streams as `response.reasoning_text.*`
events in a `reasoning_text` content part, as gpt-oss's own serving does. No model here
writes a summary of it; a client that asks for one (`reasoning.summary`) gets the thinking
itself in a `summary_text` part instead, with the summary events, because that is the only
reasoning Codex CLI and the AI SDK show (docs/openai.md, "Reasoning").

An item is one part of the answer (sse._events.Part), opened when the core starts the
part and closed when it ends it whole (sse._parts: calls once text or reasoning follows
them, or the answer ends whole), so the item being written when the answer is cut
(`incomplete`) or fails is never closed: its `done` events would read as a finished
message or call (Codex CLI shows a closed message as the reply), and the terminal Response
lists it as `incomplete`. The items are this encoder's state, so every response needs its
own instance.

The terminal events repeat the whole output, so the answer is kept here (as the JSON
string bodies it was sent with, decoded once when its item closes): this surface holds the
answer, where the others hold at most a partial line, so it is bounded (`full`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

from ._codes import ERROR_CODES
from ._encoders import Encoder, _dumps
from ._events import Part, PartEnding, PartKind, ReframerStats, ToolCall, ToolCallDelta
from ._openai_encoder import JSON_TYPE, SKIPPED_FIELD, openai_error, openai_finish_reason

__all__ = [
    "MAX_HELD_ANSWER_CHARS", "MAX_OUTPUT_ITEMS", "MAX_STORED_ANSWER_CHARS", "MAX_STORED_EVENT_BYTES", "MAX_STORED_HEAD_BYTES",
    "ResponsesEncoder", "responses_usage",
]

# What a response may hold before it ends `failed` with `upstream_malformed`: the answer's
# text and reasoning (as a collected answer, chat.stream.collect), and its output items
# (an item each time the model switches between thinking and answering, and one a call).
MAX_HELD_ANSWER_CHARS = 1 << 20
MAX_OUTPUT_ITEMS = 512
# A stored response's events are rows of a Durable Object's SQLite database, which holds at
# most 2 MB per string or row (developers.cloudflare.com/durable-objects/platform/limits/,
# checked 2026-12-01), and its terminal event repeats the whole output and the head (the
# request's instructions and tools). So a stored response holds at most a quarter of
# MAX_HELD_ANSWER_CHARS (at most 1 MiB in UTF-8), and its head at most 256 KiB: its largest
# event stays under MAX_STORED_EVENT_BYTES, which the object's numbering allows.
MAX_STORED_ANSWER_CHARS = 1 << 18
MAX_STORED_HEAD_BYTES = 1 << 18
MAX_STORED_EVENT_BYTES = 3 << 19

# Finish reasons that end a response `incomplete`, and the reason OpenAI gives for each.
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def responses_usage(usage: Mapping[str, int]) -> dict[str, object]:
    """Our usage counts in the Responses shape. Workers AI does not count reasoning tokens
    apart from the answer's: they are inside `output_tokens`, and `reasoning_tokens` is 0."""
    return {
        "input_tokens": usage["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": usage.get("cached_tokens", 0), "cache_write_tokens": 0},
        "output_tokens": usage["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage["total_tokens"],
    }


def _obfuscation(padding: str) -> str:
    # OpenAI's field for the padding of delta events (stream_options.include_obfuscation),
    # left out when padding is off.
    return f',"obfuscation":"{padding}"' if padding else ""


class _Item:
    """An output item: its place, its id, and what it has said so far."""

    __slots__ = ("bodies", "call", "closed", "index", "item_id", "kind", "whole")

    def __init__(self, kind: str, index: int, item_id: str, call: dict[str, Any] | None = None) -> None:
        self.kind = kind  # "reasoning", "message" or "function_call"
        self.index = index  # its output_index
        self.item_id = item_id
        self.bodies: list[str] = []  # its text (or arguments) as JSON string bodies, in order
        self.call = call  # a function call's item fields
        self.closed = False  # ended whole; the item being written when the answer is cut or fails never is
        self.whole: str | None = None  # its text, decoded once when it closes

    def text(self) -> str:
        if self.whole is not None:
            return self.whole
        # One decode for the whole text: the bodies are valid JSON string bodies.
        return json.loads('"' + "".join(self.bodies) + '"')  # type: ignore[no-any-return]

    def close(self) -> str:
        self.whole = self.text()
        self.bodies = []
        self.closed = True
        return self.whole


class ResponsesEncoder(Encoder):
    """`streamed`: server-sent events; else nothing until the end, which is the Response
    object (or OpenAI's error object), the caller setting the status from the error code.

    `response` holds the Response object's fields that repeat the request (tools,
    tool_choice, instructions, metadata, temperature and the like), as checked;
    `created_at` is its Unix time. `names` maps a tool's name as the model knows it to its
    (namespace, name) in the client's request, for the tools of a `namespace`.
    `max_tokens` is the budget the model was given, to tell an answer cut at it
    (openai_finish_reason's rule). `reasoning_summary`: the client asked for a summary of
    the reasoning (see above)."""

    def __init__(self, *, created_at: int, response: Mapping[str, Any], streamed: bool = True,
                 names: Mapping[str, tuple[str, str]] | None = None, max_tokens: int | None = None,
                 reasoning_summary: bool = False, response_id: str | None = None, background: bool = False,
                 max_held_chars: int = MAX_HELD_ANSWER_CHARS) -> None:
        self.content_type = "text/event-stream; charset=utf-8" if streamed else JSON_TYPE
        self._streamed = streamed
        self._created_at = created_at
        self._echo = dict(response)
        self._names = names or {}
        self._max_tokens = max_tokens
        # The reasoning's part: its type, and the event names and index field of its text.
        self._thinking = ("summary_text", "response.reasoning_summary", "summary_index") if reasoning_summary else \
            ("reasoning_text", "response.reasoning", "content_index")
        self._given_id = response_id  # a stored response's (its Durable Object's); else "resp_" + the request id
        self._background = background
        self._max_held_chars = max_held_chars
        self._id = ""
        self._model = ""
        self._sequence = 0
        self._items: list[_Item] = []  # one a part, in the parts' order: the open text or reasoning is the last
        self._calls: dict[int, _Item] = {}  # a call's index -> its item, until its input is whole
        self._held = 0  # characters of text, reasoning and arguments held
        self._text_prefix = ""  # what every text delta of the open message starts with

    @property
    def headers(self) -> dict[str, str]:
        return super().headers if self._streamed else {"content-type": JSON_TYPE}

    @property
    def full(self) -> bool:
        return self._held > self._max_held_chars or len(self._items) > MAX_OUTPUT_ITEMS

    # --- the frames -----------------------------------------------------------------------

    @staticmethod
    def resumed(head: Mapping[str, Any], *, sequence: int) -> ResponsesEncoder:
        """An encoder that goes on after a stored response's `sequence` events: it writes
        the terminal of a reader cut off from it (`error`). `head` is the Response object
        as `head` gave it."""
        fields = dict(head)
        encoder = ResponsesEncoder(created_at=int(fields.pop("created_at")), response={})
        encoder._id, encoder._model = str(fields.pop("id")), str(fields.pop("model"))
        encoder._background = bool(fields.pop("background", False))
        for generated in ("object", "status", "error", "incomplete_details", "output", "usage"):
            fields.pop(generated, None)
        encoder._echo = fields
        encoder._sequence = sequence
        return encoder

    def head(self, *, request_id: str, model: str) -> dict[str, Any]:
        """The Response object as it starts (`in_progress`, no output yet): what a stored
        response is until it ends."""
        self._id = self._given_id or "resp_" + request_id
        self._model = model
        return self._response("in_progress")

    def meta(self, *, request_id: str, model: str, stream_id: str | None = None, gateway_log_id: str | None = None) -> str:
        response = self.head(request_id=request_id, model=model)
        if not self._streamed:
            return ""
        return self._event("response.created", {"response": response}) + self._event("response.in_progress", {"response": response})

    def part_start(self, part: Part, padding: str) -> str:
        if part.kind is PartKind.TEXT:
            return self._open_message()
        if part.kind is PartKind.REASONING:
            return self._open_reasoning()
        assert part.call is not None
        return self._open_call(part.call.index, part.call.id, part.call.name)

    def part_end(self, part: Part, ending: PartEnding) -> str:
        # A part cut off or failed is never closed (see the module's docstring).
        return self._close(self._items[part.number]) if ending is PartEnding.WHOLE else ""

    def delta(self, text: str, padding: str) -> str:
        return self.json_delta(encode_basestring(text)[1:-1], padding)

    def json_delta(self, body: str, padding: str) -> str:
        self._hold(body)
        if not self._streamed:
            return ""
        number = self._next()
        return f'{self._text_prefix}"{body}","logprobs":[]{_obfuscation(padding)},"sequence_number":{number}}}\n\n'

    def reasoning(self, text: str, padding: str) -> str:
        return self.json_reasoning(encode_basestring(text)[1:-1], padding)

    def json_reasoning(self, body: str, padding: str) -> str:
        item = self._hold(body)
        if not self._streamed:
            return ""
        number = self._next()
        _, events, index = self._thinking
        return (f'event: {events}_text.delta\ndata: {{"type":"{events}_text.delta",'
                f'"item_id":"{item.item_id}","output_index":{item.index},"{index}":0,"delta":"{body}"'
                f'{_obfuscation(padding)},"sequence_number":{number}}}\n\n')

    def tool_call_delta(self, delta: ToolCallDelta, padding: str) -> str:
        item = self._calls[delta.index]
        body = encode_basestring(delta.arguments)[1:-1]
        item.bodies.append(body)
        self._held += len(body)
        if not self._streamed:
            return ""
        number = self._next()
        return (f'event: response.function_call_arguments.delta\ndata: {{"type":"response.function_call_arguments.delta",'
                f'"item_id":"{item.item_id}","output_index":{item.index},"delta":"{body}"{_obfuscation(padding)},'
                f'"sequence_number":{number}}}\n\n')

    def tool_call(self, call: ToolCall) -> str:
        # Whole, as the assembler has it; closed when its part ends.
        item = self._calls.pop(call.index)
        item.whole = call.arguments
        item.bodies = []
        return ""

    def ping(self) -> str:
        # A comment: the SDKs skip it, proxies see the connection alive.
        return ": ping\n\n" if self._streamed else ""

    def done(self, stats: ReframerStats) -> str:
        # The Chat Completions rule: a budget spent without a finish reason reads as a cut.
        reason = _INCOMPLETE.get(openai_finish_reason(stats, self._max_tokens))
        usage = None if stats.usage is None else responses_usage(stats.usage)
        status = "completed" if reason is None else "incomplete"
        response = self._response(status, usage=usage, incomplete=reason)
        if stats.skipped:
            response[SKIPPED_FIELD] = stats.skipped  # frames left out: the answer may have gaps (an extra key, kept by the SDKs)
        if not self._streamed:
            return _dumps(response)
        return self._event(f"response.{status}", {"response": response})

    def error(self, *, code: str, message: str, request_id: str) -> str:
        if not self._streamed:
            return _dumps(openai_error(code, message))
        # Nothing being written was closed (see the module's docstring).
        # OpenAI's `error` event, with the fields of its type and the `error` object that
        # makes the openai SDKs raise; then the terminal, which clients that skip `error`
        # (Codex CLI) end on. The Response's error.code is one of OpenAI's own few: ours
        # travels in the message, with the request id for support, as in the AI SDK's chunk.
        failure = openai_error(code, message)
        overloaded = code in ERROR_CODES and ERROR_CODES[code].status == 429
        described = {"code": "rate_limit_exceeded" if overloaded else "server_error", "message": f"{message} ({code}, request {request_id})"}
        # A cancelled response is not a failed one: its status says so, and it has no error.
        # OpenAI's stream has no event of its own for it; `response.failed` is the terminal
        # every client ends on (docs/openai.md, "Stored and background responses").
        ended = self._response("cancelled") if code == "cancelled" else self._response("failed", error=described)
        return (self._event("error", {"code": code, "message": message, "param": None, **failure})
                + self._event("response.failed", {"response": ended}))

    # --- items ------------------------------------------------------------------------------

    def _hold(self, body: str) -> _Item:
        item = self._items[-1]  # the open message or reasoning
        item.bodies.append(body)
        self._held += len(body)
        return item

    def _open_message(self) -> str:
        item = self._add("message", "msg")
        self._text_prefix = (f'event: response.output_text.delta\ndata: {{"type":"response.output_text.delta",'
                             f'"item_id":"{item.item_id}","output_index":{item.index},"content_index":0,"delta":')
        if not self._streamed:
            return ""
        added = {"id": item.item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        return (self._event("response.output_item.added", {"output_index": item.index, "item": added})
                + self._event("response.content_part.added", {"item_id": item.item_id, "output_index": item.index,
                                                              "content_index": 0, "part": part}))

    def _open_reasoning(self) -> str:
        item = self._add("reasoning", "rs")
        if not self._streamed:
            return ""
        added = {"id": item.item_id, "type": "reasoning", "summary": [], "content": [], "status": "in_progress"}
        kind, _, index = self._thinking
        part_added = "response.reasoning_summary_part.added" if kind == "summary_text" else "response.content_part.added"
        return (self._event("response.output_item.added", {"output_index": item.index, "item": added})
                + self._event(part_added, {"item_id": item.item_id, "output_index": item.index, index: 0,
                                           "part": {"type": kind, "text": ""}}))

    def _open_call(self, index: int, call_id: str, name_known: str) -> str:
        namespace, name = self._names.get(name_known, (None, name_known))
        fields: dict[str, Any] = {"call_id": call_id, "name": name}
        if namespace is not None:
            fields["namespace"] = namespace
        item = self._calls[index] = self._add("function_call", "fc", fields)
        if not self._streamed:
            return ""
        return self._event("response.output_item.added", {"output_index": item.index, "item": self._call_item(item, "in_progress")})

    def _add(self, kind: str, prefix: str, call: dict[str, Any] | None = None) -> _Item:
        item = _Item(kind, len(self._items), f"{prefix}_{self._id[5:]}_{len(self._items)}", call)
        self._items.append(item)
        return item

    def _close(self, item: _Item) -> str:
        text = item.close()
        if not self._streamed:
            return ""
        if item.kind == "function_call":
            assert item.call is not None
            done = {"output_index": item.index, "item_id": item.item_id, "name": item.call["name"], "arguments": text}
            return (self._event("response.function_call_arguments.done", done)
                    + self._event("response.output_item.done", {"output_index": item.index, "item": self._item(item)}))
        where: dict[str, object] = {"item_id": item.item_id, "output_index": item.index, "content_index": 0}
        part_done = "response.content_part.done"
        if item.kind == "message":
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            text_done = self._event("response.output_text.done", {**where, "text": text, "logprobs": []})
        else:
            kind, events, index = self._thinking
            if kind == "summary_text":
                where = {"item_id": item.item_id, "output_index": item.index, index: 0}
                part_done = "response.reasoning_summary_part.done"
            part = {"type": kind, "text": text}
            text_done = self._event(f"{events}_text.done", {**where, "text": text})
        return (text_done + self._event(part_done, {**where, "part": part})
                + self._event("response.output_item.done", {"output_index": item.index, "item": self._item(item)}))

    def _item(self, item: _Item) -> dict[str, Any]:
        status = "completed" if item.closed else "incomplete"
        if item.kind == "function_call":
            return self._call_item(item, status)
        text = item.text()
        if item.kind == "message":
            return {"id": item.item_id, "type": "message", "status": status, "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]}
        part = [{"type": self._thinking[0], "text": text}]
        summary, content = (part, []) if self._thinking[0] == "summary_text" else ([], part)
        return {"id": item.item_id, "type": "reasoning", "summary": summary, "content": content, "status": status}

    def _call_item(self, item: _Item, status: str) -> dict[str, Any]:
        return {"id": item.item_id, "type": "function_call", "status": status, **(item.call or {}), "arguments": item.text()}

    # --- the response -----------------------------------------------------------------------

    def _response(self, status: str, *, usage: dict[str, object] | None = None, incomplete: str | None = None,
                  error: dict[str, str] | None = None) -> dict[str, Any]:
        output = [] if status == "in_progress" else [self._item(item) for item in self._items]
        return {
            "id": self._id, "object": "response", "created_at": self._created_at, "status": status,
            "background": self._background, "error": error, "incomplete_details": None if incomplete is None else {"reason": incomplete},
            "model": self._model, "output": output, "usage": usage, **self._echo,
        }

    def _event(self, kind: str, fields: Mapping[str, Any]) -> str:
        return f"event: {kind}\ndata: {_dumps({'type': kind, **fields, 'sequence_number': self._next()})}\n\n"

    def _next(self) -> int:
        number = self._sequence
        self._sequence += 1
        return number
