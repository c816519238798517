"""The emulator's JSON mode and its busy models (docs/emulator.md, "JSON mode" and "A busy
model and rejectIfBusy"), in the real runtime. Through the Worker's pass-through route
`/api/chat/raw`, which forwards the model's stream as it is: what the Worker sends a model
that streams JSON (GLM, OpenAI's shape) and one that does not (Llama 3.3, Cloudflare's
shape, asked with `stream: false` and answered whole), and what its fallbacks send as
`rejectIfBusy`. The binding's refusals the Worker never provokes (5025, 5023, 8001) and a
native model's whole answer as the object it is, through a probe Worker that calls
`env.AI.run` as it is told."""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

import httpx
import pytest

from tests.harness.runtime import LocalRuntime, RuntimeOptions
from tests.harness.scenarios import generated, native_frame, script

MODEL = "@cf/zai-org/glm-4.7-flash"  # wrangler.toml's MODEL: OpenAI-style chunks, thinks, JSON mode streams
NATIVE_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # native frames, JSON mode only whole
NO_JSON_MODEL = "@cf/meta/llama-3.1-8b-instruct-fast"  # its schema takes no response_format

# Each model in its own framing, unpaced; the Worker's options are test_emulator_quirks.py's
# (FALLBACK_MODELS the native model), so the two files share one runtime.
VARIABLES = (("FALLBACK_MODELS", NATIVE_MODEL),)


def options(ai_script: dict[str, Any]) -> RuntimeOptions:
    return RuntimeOptions(ai_script=json.dumps(ai_script), ai_format=None, ai_pace=0.0, variables=VARIABLES)


GENERATED = options(generated([]))

# An order: required members, an enum, a const, formats, numbers in ranges, arrays of a
# definition with minItems/maxItems, a nullable string and a recursive parent (`#`).
ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "status": {"type": "string", "enum": ["shipped", "pending"]},
        "placed": {"type": "string", "format": "date-time"},
        "total": {"type": "number", "minimum": 10, "maximum": 20, "multipleOf": 0.5},
        "quantity": {"type": "integer", "exclusiveMinimum": 3},
        "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}, "minItems": 2, "maxItems": 3},
        "customer": {"$ref": "#/$defs/person"},
        "note": {"type": ["string", "null"], "maxLength": 4},
        "parent": {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
    },
    "required": ["id", "status", "lines", "customer"],
    "$defs": {
        "line": {"type": "object", "properties": {"sku": {"type": "string", "minLength": 12}, "count": {"type": "integer", "minimum": 2}},
                 "required": ["sku", "count"]},
        "person": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}, "tier": {"const": "gold"}},
                   "required": ["email", "tier"]},
    },
}
SCHEMA_WORDS = ("customer", "shipped", "sku")  # in the schema, never in a log record
ORDER_FORMAT = {"type": "json_schema", "json_schema": {"name": "order", "schema": ORDER}}


def check_order(order: Any, depth: int = 0) -> int:
    """Assert that `order` satisfies ORDER; return how many parents it nests."""
    assert isinstance(order, dict) and {"id", "status", "lines", "customer"} <= set(order) <= set(ORDER["properties"])
    uuid.UUID(order["id"])
    assert order["status"] in ("shipped", "pending")
    if "placed" in order:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", order["placed"])
    if "total" in order:
        assert isinstance(order["total"], int | float) and 10 <= order["total"] <= 20 and (order["total"] * 2) % 1 == 0
    if "quantity" in order:
        assert isinstance(order["quantity"], int) and order["quantity"] > 3
    assert 2 <= len(order["lines"]) <= 3
    for line in order["lines"]:
        assert set(line) <= {"sku", "count"} and isinstance(line["sku"], str) and len(line["sku"]) >= 12
        assert isinstance(line["count"], int) and not isinstance(line["count"], bool) and line["count"] >= 2
    customer = order["customer"]
    assert customer["tier"] == "gold" and re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", customer["email"])
    assert order.get("note") is None or (isinstance(order["note"], str) and len(order["note"]) <= 4)
    parent = order.get("parent")
    return depth if parent is None else check_order(parent, depth + 1)


# --- reading streams --------------------------------------------------------------------


def sse_payloads(body: bytes) -> list[Any]:
    """The `data:` payloads of an event stream (JSON, or "[DONE]")."""
    payloads = []
    for event in body.decode().split("\n\n"):
        if event.startswith("data: "):
            data = event[len("data: "):]
            payloads.append(data if data == "[DONE]" else json.loads(data))
    return payloads


def openai_stream(body: bytes) -> tuple[list[dict[str, Any]], str, str]:
    """(chunks, content, reasoning) of an OpenAI-style stream, checked to end as Workers AI's do."""
    payloads = sse_payloads(body)
    assert payloads[-1] == "[DONE]" and payloads.count("[DONE]") == 1
    chunks = payloads[:-1]
    assert chunks[-1]["choices"] == [], "the last chunk carries usage only"
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning_content") or "" for c in chunks if c["choices"])
    return chunks, content, reasoning


def native_text(body: bytes) -> str:
    payloads = sse_payloads(body)
    assert payloads[-1] == "[DONE]"
    return "".join(str(p.get("response") or "") for p in payloads[:-1])


async def raw(http: httpx.AsyncClient, runtime: LocalRuntime, prompt: str, **fields: Any) -> bytes:
    response = await http.post(runtime.url + "/api/chat/raw", json={"messages": [{"role": "user", "content": prompt}], **fields})
    assert response.status_code == 200, response.text
    return response.content


def ai_runs(runtime: LocalRuntime, since: int, count: int) -> list[dict[str, Any]]:
    """The emulator's `ai_run` records since `since`, once `count` have arrived (log lines
    are read asynchronously: the answer can come first)."""
    found = runtime.wait_for_count("ai_run", count, since=since)
    assert len(found) >= count, found
    return found


def only_run(runtime: LocalRuntime, since: int, model: str) -> dict[str, Any]:
    [record] = [r for r in ai_runs(runtime, since, 1) if r["model"] == model]
    return record


def assert_no_schema_in(record: dict[str, Any]) -> None:
    text = json.dumps(record)
    assert not [word for word in SCHEMA_WORDS if word in text], "the schema stays out of the log"


# --- through the Worker -----------------------------------------------------------------


async def test_a_streamed_json_schema_answer_parses_and_satisfies_a_nested_schema(start_runtime, http):
    runtime = start_runtime(GENERATED)
    mark = len(runtime.lines)
    body = await raw(http, runtime, "Where is my order?", model=MODEL, response_format=ORDER_FORMAT)
    chunks, content, reasoning = openai_stream(body)
    assert reasoning, "a thinking model still thinks first"
    texts = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    assert len([text for text in texts if text]) > 3, "the JSON arrives in pieces"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert check_order(json.loads(content)) >= 1, "the recursive parent is followed, and stops"

    record = only_run(runtime, mark, MODEL)
    assert record["stream"] is True and record["response_format"] == {"type": "json_schema", "name": "order", "shape": "openai"}
    assert_no_schema_in(record)


async def test_a_json_object_answer_is_an_object_of_the_replys_words(start_runtime, http):
    runtime = start_runtime(GENERATED)
    mark = len(runtime.lines)
    body = await raw(http, runtime, "Answer in JSON", model=MODEL, response_format={"type": "json_object"})
    _, content, _ = openai_stream(body)
    answer = json.loads(content)
    assert set(answer) == {"answer"} and isinstance(answer["answer"], str) and answer["answer"]
    assert only_run(runtime, mark, MODEL)["response_format"] == {"type": "json_object", "shape": "openai"}
    again = json.loads(openai_stream(await raw(http, runtime, "Answer in JSON", model=MODEL, response_format={"type": "json_object"}))[1])
    assert again == answer, "the same conversation, the same object"


async def test_max_tokens_cuts_a_json_answer_short_with_finish_reason_length(start_runtime, http):
    runtime = start_runtime(GENERATED)
    whole = openai_stream(await raw(http, runtime, "A short order", model=MODEL, response_format=ORDER_FORMAT))[1]
    chunks, content, reasoning = openai_stream(await raw(http, runtime, "A short order", model=MODEL, response_format=ORDER_FORMAT,
                                                         max_tokens=40))
    assert reasoning and content and whole.startswith(content) and len(content) < len(whole)
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["usage"]["completion_tokens"] == 40


async def test_a_model_that_cannot_stream_json_is_asked_for_its_whole_answer_in_its_own_shape(start_runtime, http):
    runtime = start_runtime(GENERATED)
    mark = len(runtime.lines)
    # Only what reached the binding is checked here (the answer: the next test).
    await http.post(runtime.url + "/api/chat/raw", json={"messages": [{"role": "user", "content": "Hi"}], "model": NATIVE_MODEL,
                                                         "response_format": ORDER_FORMAT})
    record = only_run(runtime, mark, NATIVE_MODEL)
    # Cloudflare's shape: the schema itself is json_schema, so there is no name to log.
    assert record["stream"] is False and record["response_format"] == {"type": "json_schema", "shape": "cloudflare"}
    assert "refused" not in record
    assert_no_schema_in(record)


async def test_a_whole_json_answer_reaches_the_client_and_satisfies_the_schema(start_runtime, http):
    runtime = start_runtime(GENERATED)
    check_order(json.loads(native_text(await raw(http, runtime, "Where is my order?", model=NATIVE_MODEL, response_format=ORDER_FORMAT))))
    assert set(json.loads(native_text(await raw(http, runtime, "Hi", model=NATIVE_MODEL, response_format={"type": "json_object"})))) == {"answer"}


async def test_every_ai_run_record_says_what_the_worker_sent_as_reject_if_busy(start_runtime, http):
    runtime = start_runtime(GENERATED)
    mark = len(runtime.lines)
    await raw(http, runtime, "Hello", model=MODEL)
    record = only_run(runtime, mark, MODEL)
    # The Worker asks for rejectIfBusy when a fallback is left to go to (chat.stream.upstream).
    assert record["reject_if_busy"] is True and isinstance(record["signal"], bool)
    assert "response_format" not in record


async def test_a_busy_primary_is_rejected_at_once_and_the_fallback_answers(start_runtime, http):
    # 20 s busy, past START_TIMEOUT_MS (15 s): a primary that queued would answer late or
    # time out, and its fallback would come after that.
    runtime = start_runtime(options({"steps": [], "models": {MODEL: script(busy_ms=20_000), NATIVE_MODEL: generated([])}}))
    mark = len(runtime.lines)
    began = time.monotonic()
    assert native_text(await raw(http, runtime, "Hello"))
    assert time.monotonic() - began < 12
    records = ai_runs(runtime, mark, 2)
    primary = next(r for r in records if r["model"] == MODEL)
    fallback = next(r for r in records if r["model"] == NATIVE_MODEL)
    assert primary["reject_if_busy"] is True and primary["rejected_busy"] is True
    assert fallback["reject_if_busy"] is False and "rejected_busy" not in fallback, "the last model tried queues"
    failed = runtime.wait_for_record("chat_start_failed", since=mark, model=MODEL)
    assert failed["binding_code"] == 3040 and failed["status"] == 429


async def test_the_last_model_tried_is_not_told_to_reject_and_waits_for_capacity(start_runtime, http):
    runtime = start_runtime(options({"steps": [], "models": {
        NATIVE_MODEL: script(busy_ms=20_000), MODEL: {**generated([]), "busy_ms": 600},
    }}))
    mark = len(runtime.lines)
    began = time.monotonic()
    _, content, _ = openai_stream(await raw(http, runtime, "Hello", model=NATIVE_MODEL))
    assert content and time.monotonic() - began >= 0.6, "GLM queued for its capacity, then answered"
    records = ai_runs(runtime, mark, 2)
    assert next(r for r in records if r["model"] == NATIVE_MODEL)["rejected_busy"] is True
    last = next(r for r in records if r["model"] == MODEL)
    assert last["reject_if_busy"] is False and "rejected_busy" not in last


# --- what the Worker never sends: a probe Worker calls the binding as it is told ---------

PROBE_WORKER = """\
// Test probe: env.AI.run(model, inputs, options) as given; a stream passed through, an
// object as {"result": ...}, a failure as {"error": message} with status 502.
export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === "/health") return Response.json({ status: "ok" });
    const { model, inputs, options } = await request.json();
    try {
      const result = await env.AI.run(model, inputs, options ?? {});
      if (result instanceof ReadableStream) return new Response(result, { headers: { "content-type": "text/event-stream" } });
      return Response.json({ result });
    } catch (error) {
      return Response.json({ error: String(error?.message ?? error) }, { status: 502 });
    }
  },
};
"""


@pytest.fixture(scope="session")
def probe_worker(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("json-mode-probe") / "probe.js"
    path.write_text(PROBE_WORKER, encoding="utf-8")
    return str(path)


def probe_options(probe_worker: str, ai_script: dict[str, Any] | None = None) -> RuntimeOptions:
    return RuntimeOptions(ai_script=None if ai_script is None else json.dumps(ai_script), ai_format=None, ai_pace=0.0, main=probe_worker)


async def probe(http: httpx.AsyncClient, runtime: LocalRuntime, model: str, inputs: dict[str, Any],
                options: dict[str, Any] | None = None) -> httpx.Response:
    return await http.post(runtime.url + "/probe", json={"model": model, "inputs": inputs, "options": options or {}})


HELLO = [{"role": "user", "content": "Hello"}]
NO_JSON_MODE = "5025: This model doesn't suuport JSON Schema."
NOT_STREAMED = "5023: JSON Schema mode is not supported with stream mode."
INVALID = "8001: Invalid input"
REFUSED = [
    pytest.param(NO_JSON_MODEL, {"type": "json_object"}, False, NO_JSON_MODE, id="json_object, a model without JSON mode"),
    pytest.param(NO_JSON_MODEL, ORDER_FORMAT, True, NO_JSON_MODE, id="json_schema, a model without JSON mode"),
    pytest.param(NATIVE_MODEL, {"type": "json_object"}, True, NOT_STREAMED, id="json_object, streamed where JSON mode does not stream"),
    pytest.param(NATIVE_MODEL, {"type": "json_schema", "json_schema": ORDER}, True, NOT_STREAMED, id="json_schema, streamed"),
    pytest.param(MODEL, {"type": "json_schema", "json_schema": ORDER}, True, INVALID, id="Cloudflare's shape, for an OpenAI-shape model"),
    pytest.param(MODEL, {"type": "json_schema", "json_schema": {"name": 7}}, True, INVALID, id="a name that is no string"),
    pytest.param(MODEL, {"type": "json_schema", "json_schema": {"name": "x", "strict": "yes"}}, True, INVALID, id="strict, no boolean"),
    pytest.param(MODEL, {"type": "json_schema", "json_schema": {"name": "x", "schema": []}}, True, INVALID, id="a schema that is no object"),
    pytest.param(MODEL, {"type": "xml"}, True, INVALID, id="an unknown type"),
    pytest.param(NATIVE_MODEL, "json", False, INVALID, id="no object"),
]


@pytest.mark.parametrize(("model", "response_format", "stream", "message"), REFUSED)
async def test_the_binding_refuses_a_response_format_the_model_cannot_take(start_runtime, http, probe_worker, model,
                                                                           response_format, stream, message):
    runtime = start_runtime(probe_options(probe_worker))
    mark = len(runtime.lines)
    response = await probe(http, runtime, model, {"messages": HELLO, "response_format": response_format, "stream": stream})
    assert response.status_code == 502 and response.json()["error"] == message
    assert only_run(runtime, mark, model)["refused"] == message.split(":")[0]


async def test_every_model_takes_a_text_response_format(start_runtime, http, probe_worker):
    runtime = start_runtime(probe_options(probe_worker))
    response = await probe(http, runtime, NO_JSON_MODEL, {"messages": HELLO, "response_format": {"type": "text"}})
    assert response.status_code == 200 and isinstance(response.json()["result"]["response"], str)


async def test_a_native_models_whole_json_answer_is_an_object_not_a_string(start_runtime, http, probe_worker):
    runtime = start_runtime(probe_options(probe_worker))
    response = await probe(http, runtime, NATIVE_MODEL, {"messages": HELLO, "response_format": {"type": "json_schema", "json_schema": ORDER}})
    result = response.json()["result"]
    check_order(result["response"])
    # Cut short by max_tokens, nothing parses: the text is left as it is.
    cut = await probe(http, runtime, NATIVE_MODEL, {"messages": HELLO, "max_tokens": 5, "response_format": {"type": "json_object"}})
    assert isinstance(cut.json()["result"]["response"], str) and cut.json()["result"]["usage"]["completion_tokens"] == 5


async def test_an_openai_models_whole_json_answer_is_the_text_of_a_chat_completion(start_runtime, http, probe_worker):
    runtime = start_runtime(probe_options(probe_worker))
    response = await probe(http, runtime, MODEL, {"messages": HELLO, "response_format": ORDER_FORMAT})
    [choice] = response.json()["result"]["choices"]
    assert choice["finish_reason"] == "stop" and check_order(json.loads(choice["message"]["content"])) >= 1


async def test_reject_if_busy_fails_a_busy_model_at_once_and_without_it_the_call_waits(start_runtime, http, probe_worker):
    runtime = start_runtime(probe_options(probe_worker, {"steps": [native_frame("late")], "busy_ms": 600}))
    mark = len(runtime.lines)
    rejected = await probe(http, runtime, NATIVE_MODEL, {"messages": HELLO, "stream": True}, {"rejectIfBusy": True})
    assert rejected.status_code == 502 and rejected.json()["error"] == "3040: Capacity temporarily exceeded, please try again."
    record = only_run(runtime, mark, NATIVE_MODEL)
    assert record["rejected_busy"] is True and record["reject_if_busy"] is True and record["signal"] is False

    mark = len(runtime.lines)
    began = time.monotonic()
    queued = await probe(http, runtime, NATIVE_MODEL, {"messages": HELLO, "stream": True}, {"rejectIfBusy": False})
    assert queued.status_code == 200 and native_text(queued.content + b"data: [DONE]\n\n") == "late"
    assert time.monotonic() - began >= 0.6
    record = only_run(runtime, mark, NATIVE_MODEL)
    assert record["reject_if_busy"] is False and "rejected_busy" not in record
