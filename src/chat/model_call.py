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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import catalog
from .config import Config
from .validation import ChatTurn


@dataclass(frozen=True, kw_only=True)
class ModelCall:
    """`inputs`: what every model gets; `reasoning_effort`: mapped onto each model's own
    inputs by the catalog; `options`: the binding's third argument. JSON-ready, so a
    resumable answer's Durable Object receives it as it is (`as_order`, `from_order`)."""

    inputs: Mapping[str, Any]
    models: tuple[str, ...] = ()  # the models to try, in order; (): MODEL, then FALLBACK_MODELS
    reasoning_effort: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def inputs_for(self, model: str) -> dict[str, Any]:
        return {
            **self.inputs,
            **catalog.clamped_sampling(model, self.inputs),
            **catalog.reasoning_inputs(model, self.reasoning_effort),
        }

    def as_order(self) -> dict[str, Any]:
        return {"inputs": dict(self.inputs), "models": list(self.models), "reasoning_effort": self.reasoning_effort,
                "options": dict(self.options)}

    @classmethod
    def from_order(cls, order: Mapping[str, Any]) -> ModelCall:
        return cls(inputs=order["inputs"], models=tuple(order.get("models") or ()), reasoning_effort=order.get("reasoning_effort"),
                   options=order.get("options") or {})


def model_call(turn: ChatTurn, config: Config, *, request_id: str, route: str, client: str | None) -> ModelCall:
    """The call for `turn`. `client`: a stable id of the client (its rate-limit key), sent
    to the gateway only as a digest, so spend can be capped per client there."""
    options: dict[str, Any] = {"extraHeaders": {"x-session-affinity": turn.session_key}}
    if config.ai_gateway_id is not None:
        gateway: dict[str, Any] = {"id": config.ai_gateway_id, "metadata": _metadata(request_id, route, client)}
        if turn.skip_cache:
            gateway["skipCache"] = True
        options["gateway"] = gateway
    return ModelCall(inputs=turn.model_inputs(config.system_prompt), models=turn.models, reasoning_effort=turn.reasoning_effort,
                     options=options)


def _metadata(request_id: str, route: str, client: str | None) -> dict[str, str]:
    # Never content: ids and a digest. Three of the gateway's five entries.
    metadata = {"request_id": request_id, "route": route}
    if client is not None:
        import hashlib  # only Workers behind a gateway pay for this import

        metadata["client"] = hashlib.sha256(client.encode()).hexdigest()[:32]
    return metadata
