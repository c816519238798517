"""Starting the model stream through the AI binding (FFI), with fallbacks and a deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from chat.config import Config
from chat.logs import log
from chat.model.call import CallOverlaps, ModelCall
from chat.model.errors import MODEL_REFUSED_CODES, RATE_LIMIT_CODES, binding_error_code
from chat.platform.ffi import JsException, abort_controller, alarm, as_js, js_object
from chat.stream.relay import load_plumbing, plumbing
from chat.web.errors import ApiError

# A gateway log id is a short token (a ULID today); anything else is not copied anywhere.
MAX_GATEWAY_LOG_ID_CHARS = 64


# The calls of this isolate: its one AI binding serves them all.
_overlaps = CallOverlaps()


class Started(NamedTuple):
    model: str
    stream: Any  # the JS ReadableStream of the model's events
    gateway_log_id: str | None  # the AI Gateway's log entry for the call, when it went through one


def _classify(exc: BaseException, config: Config) -> tuple[ApiError, dict[str, Any]]:
    if isinstance(exc, TimeoutError):
        return ApiError("upstream_timeout"), {"reason": "timeout"}
    code = binding_error_code(str(exc)) if isinstance(exc, JsException) else None
    if code in RATE_LIMIT_CODES:
        headers = {"retry-after": str(config.retry_after_s)}
        return ApiError("model_busy", headers=headers), {"reason": "model_busy", "binding_code": code}
    if code in MODEL_REFUSED_CODES:
        return ApiError(MODEL_REFUSED_CODES[code]), {"reason": "model_refused", "binding_code": code}
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
    # Requested, not confirmed: whether the real binding stops inference on a cancel
    # cannot be observed locally (docs/limits.md).
    log("chat_late_stream_cancel_requested", request_id=request_id, model=model)


async def start_model_stream(
    ai: Any, call: ModelCall, config: Config, request_id: str, keep_alive: Callable[[Awaitable[None]], None],
) -> Started:
    """Try each of the call's models in order (by default MODEL, then each fallback); the
    first stream that starts wins.

    Raises ApiError (400 or 403 for a model Workers AI refuses, 429, 502 or 504) when none
    starts.
    """
    models = call.models or config.models
    failures: list[ApiError] = []
    for attempt, model in enumerate(models):
        began = time.monotonic()
        inputs = call.inputs_for(model)
        whole = inputs.get("stream") is False  # a JSON mode that does not stream (chat.model.call)
        # rejectIfBusy (workers-ai/features/reject-if-busy, changelog 2026-09-17): a busy
        # model answers at once with 3040 instead of queueing for capacity, so a call with a
        # fallback to go to fails over without the wait. The last model tried queues.
        options = {**call.options, "rejectIfBusy": True} if attempt < len(models) - 1 else dict(call.options)
        aborter = abort_controller()
        # One future for the call, waited on with asyncio.wait: at the deadline it is
        # neither cancelled nor marked for logging (a cancelled shield would have asyncio
        # print a late failure's whole provider message), and it can still be awaited
        # for its late stream.
        overlap = _overlaps.begin()
        start = asyncio.ensure_future(_run(ai, model, js_object(inputs), options, aborter, request_id))
        try:
            finished, _ = await asyncio.wait({start}, timeout=config.start_timeout_ms / 1000)
        except BaseException:
            _overlaps.end(overlap)
            raise
        try:
            if whole and (not finished or start.exception() is None):
                # Still writing its whole answer at the deadline, or done: the answer
                # streams from here, pinged while it is written (relay.mjs wholeAnswer).
                return await _whole_answer(start, model, overlap, aborter, keep_alive)
            if not finished:
                start.add_done_callback(lambda _, late=overlap: _overlaps.end(late))
                aborter.abort()  # where the binding carries the signal, the call itself stops
                keep_alive(_cancel_when_it_arrives(start, request_id, model))
                raise TimeoutError
            stream = start.result()
        except (TimeoutError, JsException) as exc:
            if finished:
                _overlaps.end(overlap)
            failure, detail = _classify(exc, config)
            failures.append(failure)
            log("chat_start_failed", request_id=request_id, model=model, attempt=attempt,
                status=failure.status, code=failure.code, ms=_ms_since(began), **detail)
            if failure.code == "model_misconfigured":
                # The configuration names a model Workers AI does not serve: every request
                # that reaches it fails over or fails, until the operator changes it.
                alarm("model_not_served", request_id=request_id, model=model, binding_code=detail.get("binding_code"),
                      setting="MODEL" if model == config.model else "FALLBACK_MODELS")
            continue
        except BaseException:
            _overlaps.end(overlap)
            raise
        if getattr(stream, "getReader", None) is None:
            _overlaps.end(overlap)
            failure = ApiError("model_unavailable")
            failures.append(failure)
            log("chat_start_failed", request_id=request_id, model=model, attempt=attempt,
                status=502, code=failure.code, reason="not_a_stream")
            continue
        gateway_log_id = await _gateway_log_id(ai) if "gateway" in call.options else None
        if not _overlaps.end(overlap):
            gateway_log_id = None
        return Started(model, stream, gateway_log_id)
    raise _reported(failures)


async def _whole_answer(
    start: asyncio.Future[Any], model: str, overlap: int, aborter: Any, keep_alive: Callable[[Awaitable[None]], None],
) -> Started:
    await load_plumbing()
    handle = plumbing().wholeAnswer(aborter)  # a reader that leaves aborts the call
    # The gateway's log id is not read: the call may still overlap others when it ends.
    start.add_done_callback(lambda _: _overlaps.end(overlap))

    async def deliver() -> None:
        try:
            handle.deliver(as_js(await start))
        except JsException as exc:
            handle.fail(str(exc))  # read for its code only (the normalizer), like any in-band error

    keep_alive(deliver())
    return Started(model, handle.readable, None)


# Whether this isolate's AI binding takes an AbortSignal. workerd's AI binding passes
# `signal` to its fetch (cloudflare/workerd 7bf83794b, 2026-03-22), but a binding reached
# over JSRPC refuses one ("DataCloneError: AbortSignal serialization is not enabled", as the
# local emulator's service binding does in workerd 1.20261117.1 without the experimental
# enable_abortsignal_rpc flag), and the AI binding is moving to JSRPC (the review of workerd
# PR #6379). So the first refusal turns signals off for the isolate, and that call goes again
# without one: nothing was sent, since the arguments failed to serialize.
_binding_takes_signals = True


async def _run(ai: Any, model: str, inputs: Any, options: dict[str, Any], aborter: Any, request_id: str) -> Any:
    global _binding_takes_signals
    if _binding_takes_signals:
        signalled = js_object(options)
        signalled.signal = aborter.signal
        try:
            return await ai.run(model, inputs, signalled)
        except JsException as exc:
            if not _is_signal_refusal(exc):
                raise
            _binding_takes_signals = False
            log("ai_signal_not_carried", request_id=request_id, model=model)
    return await ai.run(model, inputs, js_object(options))


def _is_signal_refusal(exc: JsException) -> bool:
    head = str(exc)[:200]
    return "DataCloneError" in head and "AbortSignal" in head


def _reported(failures: list[ApiError]) -> ApiError:
    """The failure a client hears of when no model started: the first that retrying can
    cure (a busy or slow model), so that clients retry; else the first model's own (the
    one asked for), not a fallback's."""
    retryable = [failure for failure in failures if failure.code not in MODEL_REFUSED_CODES.values()]
    return (retryable or failures)[0]


async def _gateway_log_id(ai: Any) -> str | None:
    """The binding's `aiGatewayLogId`: the log entry of its most recent run
    (ai-gateway/usage/worker-binding-methods); the caller keeps it only if no other call
    overlapped this one.
    The local emulator is a service binding, which the runtime's Python SDK wraps so that
    only methods cross RPC: there it is a method that returns the same value."""
    try:
        value = getattr(ai, "aiGatewayLogId", None)
        if callable(value):
            value = await value()
    except Exception:  # noqa: BLE001 - the id is for logs; the answer goes on without it
        return None
    if isinstance(value, str) and 0 < len(value) <= MAX_GATEWAY_LOG_ID_CHARS and value.isascii() and value.isprintable():
        return value
    return None


def _ms_since(began: float) -> int:
    return round((time.monotonic() - began) * 1000)
