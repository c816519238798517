"""Spending one unit of a client's budget through the Rate Limiting binding (FFI)."""

from __future__ import annotations

from typing import Any

from chat.logs import log
from chat.platform.ffi import js_object
from chat.ratelimit.keys import BINDING, ClientKey, refusal


async def spend(env: Any, key: ClientKey, *, request_id: str, route: str) -> None:
    """Count this request against `key`; raises ApiError(429, rate_limited) when over the limit.

    Fails open: when the binding is missing (a deploy without [[ratelimits]]) or its call
    throws, the request goes on and one `chat_rate_limit_skipped` line says why. The limiter
    guards the bill against abuse; it is not access control (AUTH_TOKEN and
    ALLOWED_ORIGINS are, and they fail closed), and it is approximate anyway: Cloudflare
    counts each limit per location. Failing closed would turn a configuration slip or a
    limiter outage into a chat outage for every user.
    """
    limiter = getattr(env, BINDING, None)  # a missing binding is an AttributeError on the JsProxy
    if limiter is None:
        log("chat_rate_limit_skipped", request_id=request_id, route=route, key=key.kind, reason="binding_missing")
        return
    try:
        outcome = await limiter.limit(js_object({"key": key.value}))
        allowed = outcome.success is True
    except Exception as exc:  # noqa: BLE001 - any failure of the limiter fails open (above)
        log("chat_rate_limit_skipped", request_id=request_id, route=route, key=key.kind, reason="binding_failed", detail=type(exc).__name__)
        return
    if not allowed:
        log("chat_rate_limited", request_id=request_id, route=route, key=key.kind)
        raise refusal()
