"""The emulator's --ai-script-url, on which the test pool shares runtimes
(tests/harness/pool.py): each call replays what the address serves at that moment, and a
broken address fails the call loudly instead of falling back to a generated reply."""

from __future__ import annotations

import json

from tests.harness.pool import ScriptServer
from tests.harness.runtime import LocalRuntime, RuntimeOptions
from tests.harness.scenarios import native_frame, scripted_options

ASK = {"messages": [{"role": "user", "content": "Which upstream is this?"}]}


async def test_each_call_replays_what_the_address_serves_now_and_a_broken_one_fails_loudly(http):
    # A runtime of its own (a start of a few seconds): the test serves its address itself.
    server = ScriptServer()
    url = server.new_path()
    runtime = LocalRuntime(RuntimeOptions(), script_url=url)
    try:
        runtime.start()
        for text in ("first upstream", "second upstream"):
            server.serve(url, scripted_options([native_frame(text)]))
            answer = await http.post(runtime.url + "/api/chat/raw", json=ASK)
            assert answer.status_code == 200 and json.dumps(text)[1:-1] in answer.text

        mark = len(runtime.lines)
        server._scripts[url.rsplit("/", 1)[1]] = '{"script": [1], "settings": {}}'  # not a script
        refused = await http.post(runtime.url + "/api/chat", json=ASK)
        assert refused.status_code == 502, refused.text
        runtime.wait_for_record("chat_start_failed", since=mark, timeout=30)
        runtime.wait_for_record("ai_script_unavailable", since=mark, timeout=30)  # and says so

        server.close()  # nothing serves the address any more
        mark = len(runtime.lines)
        gone = await http.post(runtime.url + "/api/chat", json=ASK)
        assert gone.status_code == 502, gone.text
        runtime.wait_for_record("chat_start_failed", since=mark, timeout=30)
        runtime.wait_for_record("ai_script_unavailable", since=mark, timeout=30)
    finally:
        runtime.stop()
        server.close()
