"""Answers leave nothing behind that the runtime later reports as an error.

A collected answer (`stream: false`) once left its timer task pending when it returned; the
timer died with the request, and Python's collector, whenever it next ran, reported each
such task: "Task was destroyed but it is pending!", one per answer, into production logs
and into whichever test held the runtime then (issue 50). The harness fails any test whose
requests make the runtime print an error (tests/conftest.py, tests/harness/output.py);
this test makes such reports come while it still holds the runtime.
"""

from __future__ import annotations

import asyncio

from tests.harness.runtime import RuntimeOptions

ANSWERS = 30
# A short idle deadline makes each answer's timer due within a fraction of a second, so the
# timers are past by the time the collector runs, not 30 s from now (wrangler.toml's).
IDLE_TIMEOUT = ("IDLE_TIMEOUT_MS", "300")
# A body of many small objects: parsing and checking it allocates enough for Python's
# incremental collector to go through the whole heap, old objects included.
MESSAGES = [{"role": "user", "content": [{"type": "text", "text": f"m{i}.{j}"} for j in range(10)]} for i in range(999)]


async def test_collected_answers_leave_no_task_that_the_collector_reports(start_runtime, http):
    # Its own runtime: the collector must find this test's answers, in an isolate no other
    # test's traffic has, and only this test reads the short idle deadline.
    runtime = start_runtime(RuntimeOptions(ai_pace=0, ai_reply_tokens=5, variables=(IDLE_TIMEOUT,), isolated=True))
    body = {"model": "@cf/zai-org/glm-4.7-flash", "messages": [{"role": "user", "content": "hi"}], "stream": False}
    for _ in range(ANSWERS):
        response = await http.post(runtime.url + "/v1/chat/completions", json=body)
        assert response.status_code == 200, response.text[:300]
    # Past every answer's idle deadline (300 ms): its timer has fired or died by now. There is
    # no event to wait for: a timer that dies says nothing.
    await asyncio.sleep(1.0)
    for _ in range(20):
        response = await http.post(runtime.url + "/v1/chat/completions", json={**body, "messages": MESSAGES})
        assert response.status_code == 200, response.text[:300]
    runtime.wait_until_quiet(quiet=1.0, timeout=5.0)
