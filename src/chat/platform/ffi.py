"""The FFI toolkit: the few ways this Worker crosses between Python and JS, each written once.

- `js_object`: a Python dict as a plain JS object (to_js alone would make a JS Map,
  which Web APIs such as Response's init do not read).
- `ProxyScope`: the Python callables a JS object calls back (stream sources, sinks,
  transformers, timers). A proxy that is never destroyed keeps its callable, and all it
  refers to, alive for as long as the isolate lives; a scope destroys them all in one
  idempotent `close()`.
- `keep_alive`: work that must finish after the response is returned (ctx.waitUntil),
  held by a strong reference until it does.
- `import_js_module`: an ES module of the Worker's bundle, awaited once per isolate.
- `json_response` and `response`: a js.Response from plain values.

pyproject.toml's ruff rule (TID251) bans importing `js` and `pyodide` anywhere else in
chat/ but in the modules it lists, which all go through this one where they can.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import js
from pyodide.ffi import JsException, JsProxy, create_proxy, to_js

from chat.logs import async_error_fields, line

__all__ = [
    "JsException", "ProxyScope", "abort_controller", "alarm", "as_js", "import_js_module", "js_bytes", "js_object", "json_response", "keep_alive",
    "report_async_errors", "response",
]


def alarm(event: str, **fields: Any) -> None:
    """A log line an operator should be alerted to: through console.error, so Workers Logs
    records it at level "error" (what an alert filters on, docs/deploying.md), and with
    `"level": "error"` in the line itself for any other reader."""
    js.console.error(line(event, level="error", **fields))


def report_async_errors() -> None:
    """Report what asyncio finds wrong (a task destroyed while pending, an exception no one
    retrieved) as an alarm line naming the request, instead of Python's default: several
    plain lines on stderr that name no request and may quote a callback's arguments."""

    def report(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        alarm("async_error", **async_error_fields(context))

    asyncio.get_event_loop().set_exception_handler(report)


def as_js(value: Any) -> Any:
    """`value` as a JS value that outlives the call it is passed to: a JS object as it is,
    a Python one converted (dicts as plain objects). A Python object passed to JS as it is
    becomes a borrowed proxy, destroyed when that call returns. The runtime's Python SDK
    hands a service binding's results back as Python values (the local emulator's)."""
    if isinstance(value, JsProxy):
        return value
    return to_js(value, dict_converter=js.Object.fromEntries)


def abort_controller() -> Any:
    """A new JS AbortController (its `signal` goes into a binding call's options)."""
    return js.AbortController.new()


def js_object(value: Mapping[str, Any]) -> Any:
    """A plain JS object of `value` (nested dicts too)."""
    return to_js(dict(value), dict_converter=js.Object.fromEntries)


def js_bytes(data: bytes) -> Any:
    """A Uint8Array copy of `data`: a stream keeps a chunk by reference after enqueue
    returns, so it must not be a view into Python's memory."""
    return to_js(data)


class ProxyScope:
    """Creates the proxies of one owner and destroys them together."""

    def __init__(self) -> None:
        self._proxies: list[Any] = []
        self.closed = False

    def proxy(self, function: Callable[..., Any]) -> Any:
        if self.closed:
            raise RuntimeError("a closed ProxyScope makes no proxies")
        proxy = create_proxy(function)
        self._proxies.append(proxy)
        return proxy

    def close(self) -> None:
        """Destroys every proxy made here; harmless to call again."""
        self.closed = True
        proxies, self._proxies = self._proxies, []
        for proxy in proxies:
            proxy.destroy()


# Tasks kept alive by `keep_alive` until they finish: the event loop holds tasks only
# weakly, and ctx.waitUntil holds the JS promise, not the Python task behind it.
_running: set[asyncio.Task[Any]] = set()


def keep_alive(ctx: Any, work: Awaitable[Any]) -> None:
    """Keep the context of `ctx` (a request's, or a Durable Object's) open until `work`
    finishes, and `work` itself alive until then."""
    task = asyncio.ensure_future(work)
    _running.add(task)
    proxy = create_proxy(task)
    ctx.waitUntil(proxy)

    def finished(done: asyncio.Task[Any]) -> None:
        _running.discard(done)
        proxy.destroy()

    task.add_done_callback(finished)


# The Worker's own ES modules, by name, once imported: an isolate imports each only once.
_js_modules: dict[str, Any] = {}


async def import_js_module(name: str) -> Any:
    """The ES module `name` of the Worker's bundle (its path from the main module's folder,
    as wrangler names it), imported on the first call in this isolate.

    Raises ImportError when the runtime cannot import it.
    """
    module = _js_modules.get(name)
    if module is not None:
        return module
    # `workers.import_from_javascript` blocks on this same promise with `pyodide.ffi.run_sync`
    # (JSPI), which works only where a stack switch is possible: called from a plain JS ->
    # Python call (a timer's or a stream's callback) it raises "Cannot stack switch because
    # the Python entrypoint was a synchronous function" (workerd 1.20261117.1, seen
    # 2026-12-01). An await needs no stack switch. workerd's python-entrypoint-helper.ts
    # puts `doAnImport` on `_pyodide_entrypoint_helper` (in the 1.20261117.1 binary and in
    # workerd's source of 2026-08-22); workers-runtime-sdk 1.9.5 awaits it the same way
    # (`import_sdk_javascript_module_async`). Evidence: docs/platform.md.
    import _pyodide_entrypoint_helper  # workerd's only: Pyodide in Node (bench/import_time.mjs) imports this module without it

    try:
        module = await _pyodide_entrypoint_helper.doAnImport(name)
    except JsException as exc:
        raise ImportError(f"the JS module {name!r} could not be imported: {exc}") from exc
    _js_modules[name] = module
    return module


def response(body: Any, status: int, headers: Mapping[str, str] | None = None) -> Any:
    """A js.Response; `body` is text, None, or a ReadableStream passed on as it is."""
    return js.Response.new(body, js_object({"status": status, "headers": dict(headers or {})}))


def json_response(status: int, payload: object = None, headers: Mapping[str, str] | None = None) -> Any:
    """A js.Response of `payload` as JSON (no body when it is None)."""
    body = None if payload is None else json.dumps(payload)
    return response(body, status, {"content-type": "application/json; charset=utf-8", **(headers or {})})
