"""Starting the model stream through the AI binding (FFI), with fallbacks and a deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import js
from pyodide.ffi import JsException, to_js

from .api_errors import RATE_LIMIT_CODES, ApiError, binding_error_code
from .config import Config
from .logs import log


def _classify(exc: BaseException, config: Config) -> tuple[ApiError, dict[str, Any]]:
    if isinstance(exc, TimeoutError):
        return ApiError("upstream_timeout"), {"reason": "timeout"}
    code = binding_error_code(str(exc)) if isinstance(exc, JsException) else None
    if code in RATE_LIMIT_CODES:
        headers = {"retry-after": str(config.retry_after_s)}
        return ApiError("rate_limited", headers=headers), {"reason": "rate_limited", "binding_code": code}
    # Clients see the table's generic message; the provider's own text goes to the log
    # only as its code.
    return ApiError("model_unavailable"), {"reason": "failed", "binding_code": code}


async def _cancel_when_it_arrives(start: asyncio.Future[Any], request_id: str, model: str) -> None:
    """A stream that shows up after its deadline is nobody's: stop its generation."""
    try:
        stream = await start
    except Exception:  # noqa: BLE001 - the late start failed: there is nothing to stop
        return
    try:
        await stream.cancel()
    except Exception as exc:  # noqa: BLE001 - logged by type; the stream is abandoned either way
        log("chat_late_stream_not_cancelled", request_id=request_id, model=model, detail=type(exc).__name__)
        return
    # Requested, not confirmed: locally the emulator sees a cancel of a stream nobody read
    # only while the request still has something in flight (docs: README, "Limits").
    log("chat_late_stream_cancel_requested", request_id=request_id, model=model)


async def start_model_stream(
    ai: Any, inputs: dict[str, Any], config: Config, request_id: str, keep_alive: Callable[[Awaitable[None]], None],
    models: tuple[str, ...] | None = None,
) -> tuple[str, Any]:
    """Try each of `models` in order (by default MODEL, then each fallback); the first
    stream that starts wins.

    Returns (model, ReadableStream). Raises ApiError (429, 502 or 504) when none starts.
    """
    js_inputs = to_js(inputs, dict_converter=js.Object.fromEntries)
    failure: ApiError | None = None
    for attempt, model in enumerate(models or config.models):
        began = time.monotonic()
        # One future for the call, waited on with asyncio.wait: at the deadline it is
        # neither cancelled nor marked for logging (a cancelled shield would have asyncio
        # print a late failure's whole provider message), and it can still be awaited
        # for its late stream. The binding may hand back a coroutine: awaited only once.
        start = asyncio.ensure_future(ai.run(model, js_inputs))
        finished, _ = await asyncio.wait({start}, timeout=config.start_timeout_ms / 1000)
        try:
            if not finished:
                keep_alive(_cancel_when_it_arrives(start, request_id, model))
                raise TimeoutError
            stream = start.result()
        except (TimeoutError, JsException) as exc:
            failure, detail = _classify(exc, config)
            log("chat_start_failed", request_id=request_id, model=model, attempt=attempt,
                status=failure.status, code=failure.code, ms=_ms_since(began), **detail)
            continue
        if getattr(stream, "getReader", None) is None:
            failure = ApiError("model_unavailable")
            log("chat_start_failed", request_id=request_id, model=model, attempt=attempt,
                status=502, code=failure.code, reason="not_a_stream")
            continue
        return model, stream
    assert failure is not None
    raise failure


def _ms_since(began: float) -> int:
    return round((time.monotonic() - began) * 1000)
