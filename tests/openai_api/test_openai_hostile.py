"""Hostile requests to /v1/chat/completions, and hostile upstreams behind an answer that is
collected rather than streamed, in the real runtime (its stack and memory limits): a
clear answer each time, no crash (the harness fails a test whose runtime printed one),
and the Worker keeps serving."""

from __future__ import annotations

import pytest

from tests.harness.scenarios import done_frame, native_frame, repeat, script, scripted_options, send

MODEL = "@cf/zai-org/glm-4.7-flash"
USER = [{"role": "user", "content": "hi"}]


def body(**fields: object) -> dict:
    return {"model": MODEL, "messages": USER, **fields}


HOSTILE_FIELDS = [
    pytest.param({"model": "m" * 60_000}, 404, "model", id="model-of-60k-chars"),
    pytest.param({"stop": ["s" * 60_000]}, 400, "stop", id="stop-of-60k-chars"),
    pytest.param({"stop": [["nested"] * 3]}, 400, "stop", id="stop-not-strings"),
    pytest.param({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}] * 2000}]}, 200, None, id="2000-text-parts"),
    pytest.param({"messages": [{"role": "user", "content": [{"type": "text", "text": "a", "x": [[[[[[[[1]]]]]]]]}]}]}, 200, None, id="nested-extra-in-a-part"),
    pytest.param({"temperature": 1e308, "top_p": -0.0}, 400, "temperature", id="huge-temperature"),
    pytest.param({"seed": -1}, 400, "seed", id="negative-seed"),
    pytest.param({"n": 10**300}, 400, "n", id="n-of-300-digits"),
    pytest.param({"tools": [{"type": "function", "function": {"name": "f" * 50_000}}]}, 400, "tools[0].function.name", id="huge-tool"),
    pytest.param({"user": "u" * 60_000}, 200, None, id="huge-user-ignored"),
    pytest.param({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "maximum": 10**309}}}]}, 400,
                 "tools[0].function.parameters", id="schema-number-past-doubles"),
]


@pytest.mark.parametrize(("fields", "status", "param"), HOSTILE_FIELDS)
async def test_hostile_fields_get_a_clear_answer_and_nothing_reaches_the_logs(start_runtime, http, fields, status, param):
    runtime = start_runtime(scripted_options([native_frame("ok"), done_frame()]))
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/v1/chat/completions", json=body(**fields))
    assert response.status_code == status, response.text[:300]
    if status != 200:
        assert response.json()["error"]["param"] == param
    else:
        assert response.json()["choices"][0]["message"]["content"] == "ok"
    runtime.wait_until_quiet()
    logged = "\n".join(runtime.own_lines(mark))
    assert "m" * 100 not in logged and "u" * 100 not in logged and "s" * 100 not in logged
    assert len(logged) < 5000, "no field is copied into the logs"


TEXT_CHUNK = "".join(f'data: {{"response":"{"z" * 90}{i:08d}"}}\n\n' for i in range(100))
HOSTILE_UPSTREAMS = {
    # Over 1 Mi characters of text: more than a collected answer may hold.
    "endless text": [repeat(200, TEXT_CHUNK)],
    # An event that never ends: the line and event caps end it.
    "endless event": [native_frame("a"), repeat(2_000, "data: " + "y" * 1000 + "\n")],
    "one huge chunk": [send("".join(f'data: {{"response":"{i:05d}"}}\n\n' for i in range(100_000)) + "data: [DONE]\n\n")],
    # Many small chunks: a timer per read once reached workerd's 10,000 active timers (500).
    "many small chunks": [repeat(12_000, 'data: {"response":"S"}\n\n'), done_frame()],
}


@pytest.mark.parametrize(
    ("prompt", "status", "code"),
    [
        pytest.param("endless text", 502, "upstream_malformed", id="endless-text"),
        pytest.param("endless event", 502, "upstream_malformed", id="endless-event"),
        pytest.param("one huge chunk", 200, None, id="one-huge-chunk"),
        pytest.param("many small chunks", 200, None, id="many-small-chunks"),
    ],
)
async def test_a_collected_answer_is_bounded_whatever_the_upstream_sends(start_runtime, http, prompt, status, code):
    runtime = start_runtime(scripted_options([native_frame("ok"), done_frame()],
                                             prompts={name: script(steps) for name, steps in HOSTILE_UPSTREAMS.items()}))
    mark = len(runtime.lines)
    response = await http.post(runtime.url + "/v1/chat/completions", json=body(messages=[{"role": "user", "content": prompt}]), timeout=120)
    assert response.status_code == status, response.text[:300]
    if code is not None:
        assert response.json()["error"]["code"] == code
        runtime.wait_for_record("ai_upstream_cancelled", since=mark, timeout=20)
    elif prompt == "many small chunks":
        assert response.json()["choices"][0]["message"]["content"] == "S" * 12_000
        assert not any("QuotaExceeded" in line or "never retrieved" in line for line in runtime.own_lines(mark))
    else:
        assert response.json()["choices"][0]["message"]["content"] == "".join(f"{i:05d}" for i in range(100_000))
    after = await http.post(runtime.url + "/v1/chat/completions", json=body())
    assert after.status_code == 200 and after.json()["choices"][0]["message"]["content"] == "ok", "the next request is served"
