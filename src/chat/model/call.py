"""What one chat turn asks of the AI binding: `env.AI.run(model, inputs, options)`'s inputs
for each model that may answer it, and its options (AI Gateway, prompt caching). Pure
Python; `upstream` makes the call.

The options follow Cloudflare's pages (checked 2026-12-01): prompt caching routes a
session's turns to one instance with the `x-session-affinity` header, sent through the
binding's `extraHeaders` (workers-ai/features/prompt-caching); AI Gateway takes `gateway:
{id, skipCache, cacheTtl, cacheKey, collectLog, metadata}`, at most five metadata entries
of strings, numbers or booleans (ai-gateway/usage/worker-binding-methods,
ai-gateway/observability/custom-metadata).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chat.config import Config
from chat.model import catalog
from chat.turn import ChatTurn, OutputFormat


@dataclass(frozen=True, kw_only=True)
class ModelCall:
    """`inputs`: what every model gets; `reasoning_effort`: mapped onto each model's own
    inputs by the catalog; `options`: the binding's third argument. JSON-ready, so a
    resumable answer's Durable Object receives it as it is (`as_order`, `from_order`)."""

    inputs: Mapping[str, Any]
    models: tuple[str, ...] = ()  # the models to try, in order; (): MODEL, then FALLBACK_MODELS
    reasoning_effort: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    output: OutputFormat | None = None  # a JSON mode, sent in each model's own shape

    def inputs_for(self, model: str) -> dict[str, Any]:
        return {
            **self.inputs,
            **catalog.clamped_sampling(model, self.inputs),
            **catalog.reasoning_inputs(model, self.reasoning_effort),
            **output_inputs(model, self.output),
        }

    def as_order(self) -> dict[str, Any]:
        return {"inputs": dict(self.inputs), "models": list(self.models), "reasoning_effort": self.reasoning_effort,
                "options": dict(self.options), "output": None if self.output is None else self.output.as_order()}

    @classmethod
    def from_order(cls, order: Mapping[str, Any]) -> ModelCall:
        return cls(inputs=order["inputs"], models=tuple(order.get("models") or ()), reasoning_effort=order.get("reasoning_effort"),
                   options=order.get("options") or {}, output=OutputFormat.from_order(order.get("output")))


def output_inputs(model: str, output: OutputFormat | None) -> dict[str, Any]:
    """The binding inputs that ask `model` for `output`: `response_format` in the shape its
    schema takes (chat.model.catalog, JsonMode); {} for text, or for a model that takes none
    (never chosen for such a turn: chat.api.validation.models_able). A model that cannot
    stream in JSON mode is asked for the whole answer (`stream: false`)."""
    mode = catalog.json_mode(model)
    if output is None or output.kind == "text" or mode is None:
        return {}
    schema = _js_numbers(output.schema or {})
    inputs: dict[str, Any] = {}
    if output.kind == "json_object":
        inputs["response_format"] = {"type": "json_object"}
    elif mode.shape == "cloudflare":
        inputs["response_format"] = {"type": "json_schema", "json_schema": schema}
    else:
        spec: dict[str, Any] = {"name": output.name, "schema": schema, "strict": output.strict}
        if output.description is not None:
            spec["description"] = output.description
        inputs["response_format"] = {"type": "json_schema", "json_schema": spec}
    if not mode.streams:
        inputs["stream"] = False
    return inputs


class CallOverlaps:
    """Which of this isolate's binding calls overlapped another. The binding reports only
    the gateway log id of its most recent call, and one binding serves every request of the
    isolate: a call that overlapped another cannot tell whose id it reads, so it reads none.
    A call lasts from run() until it settles (a late one too) or its id was read."""

    def __init__(self) -> None:
        self._calls: dict[int, bool] = {}  # call -> alone so far
        self._next = 0

    def begin(self) -> int:
        call = self._next
        self._next += 1
        for other in self._calls:
            self._calls[other] = False
        self._calls[call] = not self._calls
        return call

    def end(self, call: int) -> bool:
        """Whether the call was alone from begin to end (False if ended already)."""
        return self._calls.pop(call, False)


def model_call(turn: ChatTurn, config: Config, *, request_id: str, route: str, client: str | None) -> ModelCall:
    """The call for `turn`. `client`: a stable id of the client (its rate-limit key), sent
    to the gateway only as a digest, so spend can be capped per client there."""
    options: dict[str, Any] = {"extraHeaders": {"x-session-affinity": session_key(turn, client)}}
    if config.ai_gateway_id is not None:
        gateway: dict[str, Any] = {"id": config.ai_gateway_id, "metadata": _metadata(request_id, route, client)}
        if turn.skip_cache:
            gateway["skipCache"] = True
        options["gateway"] = gateway
    inputs = turn.model_inputs(config.system_prompt)
    if "tools" in inputs:
        # Tools' schemas bound numbers as widely as response_format's do (Claude Code's Read
        # tool: `"maximum": 9007199254740991`), and would fail every model the same way.
        inputs["tools"] = _js_numbers({"tools": inputs["tools"]})["tools"]
    return ModelCall(inputs=inputs, models=turn.models, reasoning_effort=turn.reasoning_effort, options=options, output=turn.output)


# Pyodide hands an int of magnitude 2**53 - 1 or more to JS as a BigInt, which the binding's
# JSON.stringify refuses, failing every model (the attack of 2026-12-02: zod's z.int()
# bounds are exactly +-(2**53 - 1)). As floats they are the numbers JSON means in JS.
_JS_SAFE_INT = 2**53 - 1


def _js_numbers(schema: Mapping[str, Any]) -> dict[str, Any]:
    # Checked schemas (chat.api.tools, chat.output.schema): bounded in size and depth, so
    # json's own recursion is bounded.
    def number(text: str) -> int | float:
        value = int(text)
        return float(value) if abs(value) >= _JS_SAFE_INT else value

    return json.loads(json.dumps(schema), parse_int=number)  # type: ignore[no-any-return]


def session_key(turn: ChatTurn, client: str | None) -> str:
    """The prompt-caching session of a conversation (Workers AI's x-session-affinity): the
    same for every turn of it, so follow-ups reach the instance that holds its prefix.

    Made of the client (its rate-limit key) and the AI SDK's chat id or the Responses
    API's prompt_cache_key where there is one, else the conversation's opening, its messages up to the first user message, which
    every later turn repeats. The client is part of it so that other clients' sessions
    never share one on purpose: a shared session would let one client learn from
    `cached_tokens` whether its guess of another's conversation is right, and would put
    every conversation with the same opening on one instance. SHA-256, so that no client
    can craft a conversation whose key is another client's (found by the re-check of the
    attack: zlib's checksums can be steered); hashlib is imported once per isolate.
    """
    import hashlib

    if turn.chat_id is not None:
        basis: object = ["chat", turn.chat_id]
    elif turn.cache_key is not None:
        basis = ["cache_key", turn.cache_key]
    else:
        opening = next((i for i, message in enumerate(turn.messages) if message["role"] == "user"), 0)
        basis = [_without_image_bytes(message) for message in turn.messages[: opening + 1]]
    data = json.dumps([client, basis], sort_keys=True).encode("utf-8", "surrogatepass")
    return "ses-" + hashlib.sha256(data).hexdigest()[:32]


def _without_image_bytes(message: Mapping[str, Any]) -> object:
    # An image stands in by its start, end and length: its megabytes, written out again and
    # encoded for the digest, would be two more copies in the isolate's memory. Two images
    # alike in all three share a session: a cache's routing, the same client's only.
    content = message["content"]
    if isinstance(content, str):
        return message
    parts = [part if part["type"] == "text" else {"image": [(url := part["image_url"]["url"])[:128], url[-128:], len(url)]}
             for part in content]
    return {**message, "content": parts}


def _metadata(request_id: str, route: str, client: str | None) -> dict[str, str]:
    # Never content: ids and a digest. Three of the gateway's five entries.
    metadata = {"request_id": request_id, "route": route}
    if client is not None:
        import hashlib  # only Workers behind a gateway pay for this import

        metadata["client"] = hashlib.sha256(client.encode()).hexdigest()[:32]
    return metadata
