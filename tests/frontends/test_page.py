"""The chat page (public/) in Debian's headless Chromium against the real runtime.

Each runtime's scenarios run once, side by side in one browser (page_driver.mjs); the
tests below each assert on one scenario's report and on the runtime's log lines.
"""

from __future__ import annotations

import struct
import time

import httpx

from tests.frontends.upstreams import (
    FAILING,
    RATE_LIMITED,
    SLOW_ANSWER,
    STEP_MS,
    THINKING,
    THOUGHT,
    TOKEN,
    expected_answer,
)
from tests.runtime.harness import ROOT

SCREENSHOT = ROOT / "docs" / "chat-page.png"
SLOW_SCENARIOS = ("answer", "markup", "cut_off", "too_long", "phone", "resume_drop", "reload")
# Stop runs on its own: with eight pages streaming at once, the stop of a resumable answer
# was seen to end it on the Worker's side (its `stopped` event, the DELETE logged) while the
# local emulator still wrote the model's stream to its end, which it never did with fewer
# pages; not understood yet (issue note). The DELETE's cancel is also tested without a browser
# in tests/runtime/test_resumable.py.
STOP_SCENARIOS = ("stop",)
FIRST_QUESTION = "How does the answer reach this page?\nBriefly, please."
SESSION_STARTED = time.time()


def slow_run(run_pages):
    return run_pages(SLOW_ANSWER, SLOW_SCENARIOS, SCREENSHOT)


# --- a stream that fails -----------------------------------------------------------------


def test_an_error_event_shows_its_message_keeps_the_partial_text_and_offers_retry(run_pages):
    report = run_pages(FAILING, ("ask_once",)).report("ask_once")
    answer = report["answer"]
    assert answer["outcome"] == "error" and answer["text"] == "Hello"
    assert "The model stream failed." in answer["notice"] and "incomplete" in answer["notice"]
    assert "provider detail" not in answer["notice"]
    assert answer["retry"] == {"label": "Retry", "disabled": False}


# --- a model that refuses to start ------------------------------------------------------


def test_rate_limiting_shows_the_wait_from_retry_after_and_holds_retry_until_then(run_pages):
    run = run_pages(RATE_LIMITED, ("ask_once",))
    wait = httpx.post(run.runtime.url + "/api/chat", json={"messages": [{"role": "user", "content": "hi"}]}).headers["retry-after"]
    answer = run.report("ask_once")["answer"]
    assert answer["outcome"] == "error"
    assert "Too many requests" in answer["notice"] and f"retry in {wait} s" in answer["notice"]
    assert answer["retry"]["disabled"] is True and answer["retry"]["label"].startswith("Retry in ")


# --- a paced answer --------------------------------------------------------------------


def test_the_page_and_its_modules_are_served_by_static_assets_at_the_root(run_pages):
    run = slow_run(run_pages)
    report = run.report("answer")
    assert report["pageType"].startswith("text/html")
    for path in ("/app.js", "/chat-stream.js"):
        response = httpx.get(run.runtime.url + path)
        assert response.status_code == 200 and "javascript" in response.headers["content-type"]
        assert "export" in response.text or "import" in response.text


def test_an_answer_appears_piece_by_piece_while_it_streams(run_pages):
    report = slow_run(run_pages).report("answer")
    growth = report["growth"]
    streaming = [s for s in growth if s["state"] == "streaming"]
    settled = next(s for s in growth if s["state"] == "settled")
    assert (growth[0]["state"], growth[0]["length"]) == ("waiting", 0), "a typing state comes before the first text"
    lengths = [s["length"] for s in streaming]
    assert lengths == sorted(lengths) and len(set(lengths)) >= 8, growth
    assert settled["at"] - streaming[0]["at"] >= 8 * STEP_MS, "text was visible long before the end"
    at_first = report["atFirstText"]
    assert at_first["outcome"] is None and 0 < len(at_first["text"]) < len(report["first"]["text"])
    assert report["first"]["outcome"] == "complete"
    assert report["first"]["text"] == expected_answer(FIRST_QUESTION)
    assert report["first"]["notice"] is None and report["first"]["retry"] is None


def test_send_is_disabled_and_stop_offered_only_while_an_answer_streams(run_pages):
    report = slow_run(run_pages).report("answer")
    assert report["atFirstText"]["sendDisabled"] is True and report["atFirstText"]["stopVisible"] is True
    assert report["userMessagesWhileStreaming"] == 1, "Enter during a stream must not send"
    assert report["first"]["sendDisabled"] is False and report["first"]["stopVisible"] is False


def test_enter_sends_and_shift_enter_adds_a_newline(run_pages):
    report = slow_run(run_pages).report("answer")
    assert report["inputBeforeSend"] == FIRST_QUESTION
    assert report["firstUserText"] == FIRST_QUESTION
    assert report["bodies"][0] == {"reasoning_effort": "low", "resumable": True, "messages": [{"role": "user", "content": FIRST_QUESTION}]}


def test_the_conversation_so_far_is_sent_with_the_next_turn(run_pages):
    report = slow_run(run_pages).report("answer")
    second = "And if I press Stop?"
    assert report["bodies"][1] == {"reasoning_effort": "low", "resumable": True, "messages": [
        {"role": "user", "content": FIRST_QUESTION},
        {"role": "assistant", "content": expected_answer(FIRST_QUESTION)},
        {"role": "user", "content": second},
    ]}
    assert report["second"]["text"] == expected_answer(second)
    assert report["model"] == "@cf/zai-org/glm-4.7-flash", "the model from `meta` is shown"


def test_the_controls_have_accessible_names_and_the_reply_is_a_live_region(run_pages):
    report = slow_run(run_pages).report("answer")
    assert report["labels"] == {"message": 1, "send": 1, "log": 1, "logLive": "polite"}


def test_a_screenshot_of_a_finished_conversation_is_saved_under_docs(run_pages):
    report = slow_run(run_pages).report("answer")
    assert report["screenshot"] == str(SCREENSHOT)
    header = SCREENSHOT.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == (820, 860)
    assert SCREENSHOT.stat().st_mtime >= SESSION_STARTED


def test_stop_cancels_generation_upstream_and_keeps_the_partial_answer(run_pages):
    run = run_pages(SLOW_ANSWER, STOP_SCENARIOS)
    report = run.report("stop")
    stopped = report["stopped"]
    full = expected_answer("Tell me a long story.")
    assert stopped["outcome"] == "cancelled" and stopped["notice"] == "Stopped."
    assert full.startswith(stopped["text"]) and 0 < len(stopped["text"]) < len(full)
    assert report["textHalfASecondLater"] == stopped["text"], "no text arrives after Stop"
    assert stopped["sendDisabled"] is False and stopped["stopVisible"] is False
    # The page's answers are resumable: Stop stops it on the server (DELETE).
    run.runtime.wait_for_record("chat_resumable_stopped", since=run.mark, request_id=stopped["requestId"])
    ended = run.runtime.wait_for_record("chat_stream_failed", since=run.mark, request_id=stopped["requestId"])
    assert ended["code"] == "stopped" and ended["chunks"] < 16
    run.runtime.wait_for_record("ai_upstream_cancelled", since=run.mark)
    ended = {r["event"] for r in run.runtime.records(run.mark) if r.get("request_id") == stopped["requestId"]}
    assert "chat_stream_completed" not in ended


def test_retry_after_stop_resends_the_same_turn_and_completes(run_pages):
    report = run_pages(SLOW_ANSWER, STOP_SCENARIOS).report("stop")
    assert report["retried"]["outcome"] == "complete"
    assert report["retried"]["text"] == expected_answer("Tell me a long story.")
    assert report["bodies"] == [{"reasoning_effort": "low", "resumable": True, "messages": [{"role": "user", "content": "Tell me a long story."}]}] * 2
    assert report["assistantMessages"] == 1, "Retry reuses the answer's place"


def test_markup_in_model_output_is_shown_as_text_and_never_runs(run_pages):
    report = slow_run(run_pages).report("markup")
    markup = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b>'
    assert report["answer"]["outcome"] == "complete"
    assert markup in report["answer"]["text"] and report["userText"] == markup
    assert (report["images"], report["scripts"], report["bold"], report["pwned"]) == (0, 0, 0, 0)


def test_a_stream_without_a_terminal_event_says_the_answer_was_cut_off_and_retry_completes_it(run_pages):
    report = slow_run(run_pages).report("cut_off")
    assert report["intercepted"] == [{"status": 200, "hadDone": True}]
    cut = report["cut"]
    assert cut["outcome"] == "truncated"
    assert "the answer was cut off" in cut["notice"].lower()
    assert cut["text"] == expected_answer("Will this arrive whole?"), "the text that came stays"
    assert cut["retry"] == {"label": "Retry", "disabled": False}
    retried = report["retried"]
    assert retried["outcome"] == "complete" and retried["notice"] is None
    assert retried["text"] == expected_answer("Will this arrive whole?")
    assert report["bodies"][0] == report["bodies"][1] == {"reasoning_effort": "low", "resumable": True, "messages": [{"role": "user", "content": "Will this arrive whole?"}]}
    assert report["resumeAttempts"] == 4, "it tried to resume before calling the answer cut off"


def test_a_turn_over_the_body_limit_is_explained_and_put_back_in_the_input(run_pages):
    report = slow_run(run_pages).report("too_long")
    answer = report["answer"]
    assert answer["outcome"] == "error" and "too long" in answer["notice"]
    assert answer["retry"] is None, "resending the same text cannot help"
    assert report["inputLength"] == report["sentLength"]


def test_the_page_fits_a_phone_width_screen(run_pages):
    report = slow_run(run_pages).report("phone")
    assert report["answer"]["outcome"] == "complete"
    assert report["overflow"] <= 0, "nothing scrolls sideways"
    width, height = report["viewport"]["width"], report["viewport"]["height"]
    for control in (report["input"], report["send"]):
        assert 0 <= control["x"] and control["x"] + control["width"] <= width
        assert 0 <= control["y"] and control["y"] + control["height"] <= height
    assert report["send"]["height"] >= 44, "a touch-sized Send button"


def test_a_dropped_connection_shows_reconnecting_and_resumes_the_whole_answer(run_pages):
    run = slow_run(run_pages)
    report = run.report("resume_drop")
    answer = report["answer"]
    question = "Will this survive a drop?"
    assert answer["outcome"] == "complete" and answer["notice"] is None
    assert answer["text"] == expected_answer(question), "nothing missing, nothing twice"
    assert report["resumed"] == "1" and "reconnecting" in report["states"]
    assert report["resumes"] == [{"method": "GET", "lastEventId": report["cutAfterId"]}]
    assert len(report["bodies"]) == 1, "resuming never asks the model again"


def test_a_reload_mid_answer_picks_up_the_answer_still_being_written(run_pages):
    run = slow_run(run_pages)
    report = run.report("reload")
    full = expected_answer("Tell me a long story.")
    assert 0 < len(report["before"]["text"]) < len(full)
    assert report["afterReloadUserMessages"] == ["Tell me a long story."]
    after = report["after"]
    assert after["outcome"] == "complete" and after["text"] == full
    assert after["requestId"] == report["before"]["requestId"], "the same generation, not a new one"
    assert report["assistantMessages"] == 1


# --- a Worker with AUTH_TOKEN, and a model that thinks ----------------------------------


def thinking_run(run_pages):
    return run_pages(THINKING, ("token", "thinking"))


def test_without_a_token_the_page_says_where_to_enter_it_and_retry_then_answers(run_pages):
    report = thinking_run(run_pages).report("token")
    assert report["settingsOpenAtStart"] is False
    refused = report["refused"]
    assert refused["outcome"] == "error" and "access token" in refused["notice"] and "Settings" in refused["notice"]
    assert refused["retry"] == {"label": "Retry", "disabled": False}
    assert report["settingsOpenAfter401"] is True and report["focusAfter401"] == "token"
    assert report["answered"]["outcome"] == "complete" and report["answered"]["text"] == "Here is the answer."


def test_the_token_is_sent_only_as_a_bearer_header_and_kept_in_session_storage(run_pages):
    report = thinking_run(run_pages).report("token")
    assert [request["authorization"] for request in report["sent"]] == [None, f"Bearer {TOKEN}"]
    assert all(TOKEN not in request["url"] for request in report["sent"]) and TOKEN not in report["pageUrl"]
    session = report["storage"]["session"]
    assert session["chat-access-token"] == TOKEN and report["storage"]["local"] == 0
    assert [key for key, value in session.items() if TOKEN in value] == ["chat-access-token"], "nowhere else"
    assert report["tokenAfterReload"] == TOKEN, "a reload of the tab keeps it"


def test_reasoning_is_a_collapsed_thinking_section_of_text_above_the_answer(run_pages):
    report = thinking_run(run_pages).report("thinking")
    assert report["thinkingBeforeAnswer"] == "", "the section appears while the model still thinks"
    assert report["answer"]["outcome"] == "complete" and report["answer"]["text"] == "Here is the answer."
    assert report["sections"] == 1 and report["summary"] == "Thinking"
    assert report["openAtFirst"] is False and report["thinkingVisibleCollapsed"] is False
    assert report["openAfterClick"] is True
    assert report["thinkingText"] == "".join(THOUGHT)
    assert (report["elementsInside"], report["pwned"]) == (0, 0), "markup in reasoning stays text"
    assert report["orderInItem"][:3] == ["author", "thinking", "content"]
