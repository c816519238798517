"""The chat page (public/) in Debian's headless Chromium against the real runtime.

Each runtime's scenarios run once, side by side in one browser (page_driver.mjs); the
tests below each assert on one scenario's report and on the runtime's log lines.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import time

import httpx
import pytest

from tests.frontends.upstreams import (
    BAD_ARGUMENTS,
    CONTINUATION_PIECES,
    CONTINUE_PROMPT,
    CURRENT_TIME,
    CUT_GAPPED_QUESTION,
    CUT_PIECES,
    CUT_QUESTION,
    CUT_SHORT,
    DOCUMENT_ANSWER,
    DOCUMENT_SECTIONS,
    DOCUMENT_TABLE_ROWS,
    FAILING,
    FILTERED_QUESTION,
    FILTERED_TEXT,
    FIRST_QUESTION,
    GAPPED_PIECES,
    GENERATED,
    LONG_CHUNK,
    LONG_TOKENS,
    MARKDOWN,
    MARKDOWN_ANSWER,
    MARKDOWN_CODE,
    MARKDOWN_QUESTION,
    MARKUP_ARGUMENTS,
    MARKUP_CALLS,
    MARKUP_NOTE,
    MARKUP_TOOL,
    NEXT_ANSWER,
    NEXT_QUESTION,
    NO_SUCH_ZONE,
    QUICK_ANSWER,
    RATE_LIMITED,
    SLOW_ANSWER,
    STEP_MS,
    TABLE_ROWS,
    THINKING,
    THOUGHT,
    TOKEN,
    TOOL_QUESTION,
    TOOL_TEXT,
    TWO_TABS,
    UNKNOWN_END_TEXT,
    expected_answer,
    shown,
)
from tests.harness.runtime import ROOT

# Written under .dev/ (not committed); `make screenshot` copies it to docs/chat-page.png.
SCREENSHOT = ROOT / ".dev" / "chat-page.png"
SLOW_SCENARIOS = ("answer", "markup", "cut_off", "too_long", "phone", "resume_drop", "reload", "settings")
MARKDOWN_SCENARIOS = ("markdown", "hostile")
# Alone in its browser, so that its figures are the page's own.
HEAVY_SCENARIOS = ("heavy",)
# Stop runs on its own: with eight pages streaming at once, the stop of a resumable answer
# was seen to end it on the Worker's side (its `stopped` event, the DELETE logged) while the
# local emulator still wrote the model's stream to its end, which it never did with fewer
# pages; not understood yet (issue note). The DELETE's cancel is also tested without a browser
# in tests/runtime/test_resumable.py.
STOP_SCENARIOS = ("stop",)
# Every request's fields besides its messages.
BODY = {"reasoning_effort": "low", "resumable": True, "tools": [CURRENT_TIME]}
SESSION_STARTED = time.time()


def slow_run(run_pages):
    return run_pages(SLOW_ANSWER, SLOW_SCENARIOS)


# --- tool calls: the built-in tool's whole loop, with the emulator ------------------------
# (first in this file: test_cli.py's last tests leave this runtime running)


def tool_loop(run_pages):
    return run_pages(GENERATED, ("tool_loop",)).report("tool_loop")


def test_the_model_calls_the_built_in_tool_the_page_runs_it_and_the_answer_uses_the_result(run_pages):
    report = tool_loop(run_pages)
    calling, answering = report["bubbles"]
    assert report["userMessages"] == 1 and calling["outcome"] == answering["outcome"] == "complete"
    [call] = calling["calls"]
    assert call["name"] == "current_time" and call["open"] is False
    assert call["arguments"] == json.dumps({"timezone": "UTC"}, indent=2), "the parsed input, pretty-printed"
    assert call["inputError"] is None and call["resultIsError"] is False and call["status"] == "result sent back"
    result = json.loads(call["result"])
    assert result["timezone"] == "UTC" and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", result["time"]), result
    assert (calling["text"], calling["textShown"], calling["notice"]) == ("", False, None), "no empty bubble, no warning"
    assert answering["text"].startswith("Tool result: " + call["result"][:60]), "the result reached the model"
    assert answering["calls"] == [] and answering["notice"] is None
    assert report["resultVisibleCollapsed"] is False and report["resultVisibleOpen"] is True
    assert report["sendDisabled"] is False


def test_the_tool_result_goes_back_in_the_next_request_and_the_history_is_what_was_sent(run_pages):
    run = run_pages(GENERATED, ("tool_loop",))
    report = run.report("tool_loop")
    first, second = report["bodies"]
    user = {"role": "user", "content": TOOL_QUESTION}
    assert first == {**BODY, "messages": [user]}, "the tool is offered with every request"
    assistant, tool = second["messages"][1:]
    [call] = assistant["tool_calls"]
    assert second == {**BODY, "messages": [user, {"role": "assistant", "content": "", "tool_calls": [
        {"id": call["id"], "type": "function", "function": {"name": "current_time", "arguments": call["function"]["arguments"]}},
    ]}, {"role": "tool", "tool_call_id": call["id"], "content": report["bubbles"][0]["calls"][0]["result"]}]}
    assert json.loads(call["function"]["arguments"]) == {"timezone": "UTC"} and call["id"], "the model's id, kept"
    runs = [r for r in run.runtime.records(run.mark) if r["event"] == "ai_run" and r.get("tools") == ["current_time"]]
    assert runs[-1]["history"][-3:] == [{"role": "user"}, {"role": "assistant", "tool_calls": [{"id": call["id"], "name": "current_time"}]},
                                        {"role": "tool", "tool_call_id": call["id"]}], "the id reached the model as it came"
    *sent, final = report["saved"]["entries"]
    assert sent == second["messages"] and report["saved"]["pending"] is None
    assert final.keys() == {"role", "content"} and final["content"].startswith("Tool result: "), "the answer, kept as it came"


def test_after_a_reload_the_calls_and_their_results_are_shown_again_from_the_history(run_pages):
    report = tool_loop(run_pages)
    assert report["afterReload"] == [{**bubble, "outcome": None} for bubble in report["bubbles"]]
    assert report["bodiesAfterReload"] == 2, "a settled loop is not sent again"


# --- images (issue 30): attached, answered, kept, refused ------------------------------------
# On the GENERATED runtime: VISION_MODEL (wrangler.toml: Gemma 4) answers a turn with images
# when the request names no model, and the emulator's vision models start their answer by
# naming each image they got, read from its bytes: "I see a 3×2 PNG."


IMAGE_SCENARIOS = ("image_turns", "image_refused", "image_model_refused", "image_storage")
VISION_MODEL = "@cf/google/gemma-4-26b-a4b-it"
PICTURE_QUESTION = "What is in this picture?"
PLACEHOLDER = "[image not re-sent: pixels.png, a 3\u00d72 PNG]"
THUMB_CHARS = 48_000  # public/images.js: the most a kept thumbnail costs
MAX_CHAT_CHARS = 1_000_000  # public/chats.js: the most a kept chat costs


def image_run(run_pages):
    return run_pages(GENERATED, IMAGE_SCENARIOS)


def ai_runs(run, turns: int) -> list[dict]:
    """The emulator's records of this run's model calls with `turns` user messages
    (image_turns's three turns: 1, 2 and 3; image_refused's: 1)."""
    return [r for r in run.runtime.records(run.mark)
            if r["event"] == "ai_run" and sum(message["role"] == "user" for message in r["history"]) == turns]


def test_an_attached_image_goes_as_an_image_part_and_the_vision_model_answers_naming_it(run_pages):
    run = image_run(run_pages)
    report = run.report("image_turns")
    assert report["chooser"] == {"multiple": True, "accept": "image/png,image/jpeg,image/webp,image/gif", "button": 1}
    assert [(p["alt"], p["remove"], p["width"], p["height"]) for p in report["previews"]] == [
        ("pixels.png, a 3\u00d72 PNG", "Remove pixels.png", 3, 2), ("dot.gif, a 1\u00d71 GIF", "Remove dot.gif", 1, 1)]
    assert all(p["src"].startswith("data:image/webp;base64,") for p in report["previews"]), "a thumbnail made in the page"
    assert [p["alt"] for p in report["afterRemove"]] == ["pixels.png, a 3\u00d72 PNG"]
    first = report["bodies"][0]
    [message] = first["messages"]
    text, image = message["content"]
    assert {**first, "messages": None} == {**BODY, "messages": None}, "no model named: the Worker picks VISION_MODEL"
    assert text == {"type": "text", "text": PICTURE_QUESTION} and image.keys() == {"type", "image_url"}
    header, data = image["image_url"]["url"].split(",", 1)
    sent = base64.b64decode(data, validate=True)
    assert header == "data:image/png;base64" and len(sent) == report["pngBytes"] and struct.unpack(">II", sent[16:24]) == (3, 2)
    answer = report["answer"]
    assert answer["outcome"] == "complete" and answer["text"].startswith("I see a 3\u00d72 PNG."), answer["text"][:80]
    assert report["model"] == VISION_MODEL
    [got] = [r for r in ai_runs(run, 1) if r.get("images") == 1]
    assert (got["model"], got["image_bytes"]) == (VISION_MODEL, report["pngBytes"]), "what reached the model"
    assert report["attachedAfterSend"] == 0
    assert report["shown"][0] == {"text": PICTURE_QUESTION, "described": [], "images": [
        {"src": "data:image/webp;base64,", "alt": "pixels.png, a 3\u00d72 PNG", "width": 3, "height": 2}]}
    assert report["foreign"] == [], "nothing remote is loaded"


def test_the_next_turn_re_sends_a_held_image_and_after_a_reload_sends_a_placeholder_part(run_pages):
    run = image_run(run_pages)
    report = run.report("image_turns")
    first, second, third = report["bodies"]
    assert second["messages"][0] == first["messages"][0], "held in this page's memory: sent again"
    assert report["second"]["text"].startswith("I see a 3\u00d72 PNG.")
    question, answer, follow_up, answer_2, last = third["messages"]
    assert question == {"role": "user", "content": [{"type": "text", "text": PICTURE_QUESTION}, {"type": "text", "text": PLACEHOLDER}]}
    assert follow_up == {"role": "user", "content": "And the colours?"} and last == {"role": "user", "content": "Is it still there?"}
    assert answer["content"].startswith("I see") and answer_2["content"].startswith("I see")
    assert report["third"]["outcome"] == "complete" and not report["third"]["text"].startswith("I see"), "no image reached the model"
    [again] = ai_runs(run, 2)
    [after_reload] = ai_runs(run, 3)
    assert (again["model"], again["images"], again["image_bytes"]) == (VISION_MODEL, 1, report["pngBytes"])
    assert after_reload["images"] == 0, "the third call carried none"


def test_a_reload_keeps_the_conversation_with_its_thumbnail_within_the_storage_bound(run_pages):
    report = image_run(run_pages).report("image_turns")
    question = report["saved"]["entries"][0]
    [image] = question.pop("images")
    assert question == {"role": "user", "content": PICTURE_QUESTION}
    assert {k: v for k, v in image.items() if k not in ("id", "thumb")} == {
        "name": "pixels.png", "type": "image/png", "width": 3, "height": 2, "size": report["pngBytes"]}
    assert image["thumb"].startswith("data:image/webp;base64,")
    assert "data:image/png" not in json.dumps(report["saved"]), "the image's bytes are never kept"
    kept = report["kept"]
    assert kept["thumbChars"] == [len(image["thumb"])] and kept["thumbChars"][0] <= THUMB_CHARS
    assert kept["chatChars"] < MAX_CHAT_CHARS
    assert report["afterReload"][0] == report["shown"][0], "the thumbnail is shown again"


def test_an_oversized_file_and_files_that_are_not_images_are_refused_in_the_page_and_nothing_is_sent(run_pages):
    report = image_run(run_pages).report("image_refused")
    assert report["oversized"] == {"role": "alert", "visible": True, "attached": 0, "lines": [
        "\u201chuge.png\u201d was not attached: it is 5.1 MiB, and an image may be at most 5 MiB."]}
    assert report["notImage"]["lines"] == ["\u201cnotes.txt\u201d was not attached: its bytes are not a PNG, JPEG, WebP or GIF image."]
    assert report["namedLikeAnImage"]["lines"] == [
        "\u201cphoto.png\u201d was not attached: its bytes are not a PNG, JPEG, WebP or GIF image."], "the bytes decide, not the name"
    assert report["notImage"]["attached"] == report["namedLikeAnImage"]["attached"] == 0
    assert report["userMessages"] == 0 and report["bodiesBeforeSend"] == 0, "nothing sent"


def test_a_dropped_and_a_pasted_image_are_attached_and_the_count_and_total_are_checked_before_sending(run_pages):
    report = image_run(run_pages).report("image_refused")
    assert report["noticeAfterDrop"] is False, "an image that passes clears the notice"
    assert report["pasteKeptDefault"] is False, "a pasted picture is not pasted as text too"
    assert [p["alt"] for p in report["droppedAndPasted"]] == ["dropped.gif, a 1\u00d71 GIF", "image.png, a 3\u00d72 PNG"]
    assert all(3_000_000 < size < 3_100_000 for size in report["noiseBytes"])
    [past_total] = report["pastTotal"]["lines"]
    assert re.fullmatch(r"\u201cnoise-3\.png\u201d was not attached: the images of a message may total at most 6 MiB, "
                        r"and with it they would be 8\.\d MiB\.", past_total), past_total
    assert report["pastTotal"]["attached"] == 4
    assert report["pastCount"]["lines"] == ["\u201cdot-5.gif\u201d was not attached: a message may carry at most 8 images."]
    assert report["pastCount"]["attached"] == 8


def test_a_full_composer_of_eight_images_within_the_bounds_is_answered_and_kept_as_thumbnails(run_pages):
    run = image_run(run_pages)
    report = run.report("image_refused")
    [[question]] = report["sent"]
    text, *images = question
    assert text == {"type": "text", "text": "Describe them all."} and len(images) == 8
    assert [part["url"] for part in images] == ["data:image/gif;base64,", "data:image/png;base64,", "data:image/png;base64,",
                                                "data:image/png;base64,", *["data:image/gif;base64,"] * 4]
    seen = ["a 1\u00d71 GIF", "a 3\u00d72 PNG", "a 1000\u00d71000 PNG", "a 1000\u00d71000 PNG", *["a 1\u00d71 GIF"] * 4]
    assert report["answer"]["outcome"] == "complete"
    assert report["answer"]["text"].startswith(f"I see {', '.join(seen[:-1])} and {seen[-1]}."), report["answer"]["text"][:200]
    [got] = [r for r in ai_runs(run, 1) if r.get("images") == 8]
    assert (got["model"], got["image_bytes"]) == (VISION_MODEL, sum(report["noiseBytes"][:2]) + 5 * report["gifBytes"] + report["pngBytes"])
    [shown] = report["shown"]
    assert len(shown["images"]) == 8 and all(image["src"] == "data:image/webp;base64," for image in shown["images"])
    sides = {(image["width"], image["height"]) for image in shown["images"][2:4]}
    assert len(sides) == 1 and 32 <= min(sides)[0] == min(sides)[1] <= 256, ("downscaled to 256 px or less", sides)
    kept = report["kept"]
    assert all(chars <= THUMB_CHARS for chars in kept["thumbChars"]), kept
    assert kept["chatChars"] < MAX_CHAT_CHARS


def test_a_refused_image_is_explained_by_its_name_and_the_turn_goes_back_into_the_composer(run_pages):
    report = image_run(run_pages).report("image_model_refused")
    answer = report["answer"]
    notice = "The image \u201cpixels.png\u201d was not accepted: @cf/zai-org/glm-4.7-flash does not take images."
    assert answer["outcome"] == "error" and answer["notice"] == notice
    assert answer["retry"] is None and answer["status"] == "The message was not sent."
    assert report["refusedBubble"] is True and report["bodies"] == 1
    assert report["inputAfter"] == PICTURE_QUESTION
    assert [p["alt"] for p in report["previewsAfter"]] == ["pixels.png, a 3\u00d72 PNG"], "the image is attached again"


def test_a_chat_of_many_images_drops_its_oldest_thumbnails_to_stay_kept_and_a_remote_image_url_is_refused(run_pages):
    report = image_run(run_pages).report("image_storage")
    assert report["saved"] == "kept" and report["keptChars"] <= MAX_CHAT_CHARS
    kept = report["withThumb"]
    assert 10 < len(kept) < 30 and kept == [f"Picture {turn}" for turn in range(30 - len(kept), 30)], "the newest keep theirs"
    assert report["onScreenKeepsAll"] == 30, "the chat on screen is not changed"
    assert report["hostileLoaded"] is None, "a kept image that is not a data: URL of an image is not loaded"


# --- keeping chats: storage that refuses, and two tabs on one chat -------------------------


def test_a_save_over_another_tabs_save_is_refused_and_both_copies_are_kept(run_pages):
    report = run_pages(TWO_TABS, ("chat_store",)).report("chat_store")
    assert "failed" not in report, report.get("failed")
    assert (report["first"], report["b"], report["aConflict"], report["aForked"], report["again"]) == (
        "kept", "kept", "conflict", "kept", "kept")
    assert report["kept"] == {"shared": ["one", "About one.", "two, in B", "About two, in B."],
                              "forked": ["one", "About one.", "two, in A", "About two, in A."]}
    assert (report["tooLarge"], report["full"]) == ("too_large", "full")


def test_two_tabs_on_one_chat_lose_no_turn_and_the_tab_whose_copy_moved_says_so(run_pages):
    run = run_pages(TWO_TABS, ("two_tabs",))
    report = run.report("two_tabs")
    assert "failed" not in report, report.get("failed")
    assert "another tab" in report["otherStatus"], "tab B showed A's question when A saved it"
    assert report["b"]["users"] == ["Hello?", "Tell me a long story.", "Hello again?"]
    assert report["a"]["users"] == ["Hello?", "Tell me a long story."]
    assert report["a"]["chatId"] != report["original"] and report["a"]["noticeShown"] and "another tab" in report["a"]["notice"]
    kept = report["kept"]
    assert kept[report["original"]][-2:] == [["user", "Hello again?"], ["assistant", QUICK_ANSWER]], "B's copy stays where it was"
    assert kept[report["a"]["chatId"]][-2:] == [["user", "Tell me a long story."], ["assistant", "Once upon a time."]], "A's turns are kept apart"


# --- tool calls: markup, bad input, unknown tools and the bound on rounds ----------------


def tool_markup(run_pages):
    return run_pages(MARKUP_CALLS, ("tool_markup",)).report("tool_markup")


def test_a_tool_calls_name_and_arguments_are_shown_as_text_and_never_run_as_html(run_pages):
    report = tool_markup(run_pages)
    first = report["bubbles"][0]
    markup = first["calls"][0]
    assert first["text"] == shown(TOOL_TEXT) and first["textShown"] is True
    assert markup["name"] == MARKUP_TOOL and markup["arguments"] == json.dumps({"note": MARKUP_NOTE}, indent=2)
    assert (report["images"], report["bold"], report["pwned"]) == (0, 0, 0)
    assert [call["elementsInText"] for call in first["calls"]] == [0, 0, 0]


def test_a_calls_arguments_grow_on_screen_as_their_fragments_arrive(run_pages):
    seen = tool_markup(run_pages)["argumentsSeen"]
    assert MARKUP_ARGUMENTS[:20] in seen and MARKUP_ARGUMENTS[:40] in seen, seen
    assert seen.index(MARKUP_ARGUMENTS[:20]) < seen.index(MARKUP_ARGUMENTS[:40]) < seen.index(json.dumps({"note": MARKUP_NOTE}, indent=2))


def test_an_unknown_tool_arguments_that_are_not_json_or_an_unknown_zone_get_an_error_result_sent_back(run_pages):
    report = tool_markup(run_pages)
    markup, bad, mars = report["bubbles"][0]["calls"]
    assert markup["resultIsError"] is True and markup["result"].startswith("Error: there is no tool named ")
    assert markup["status"] == "error sent back"
    assert bad["name"] == "current_time" and bad["arguments"] == BAD_ARGUMENTS, "invalid arguments are shown raw"
    assert bad["inputError"] and bad["inputError"].startswith("Input error: ")
    assert bad["resultIsError"] is True and bad["result"].startswith("Error: invalid arguments (")
    assert mars["arguments"] == json.dumps(json.loads(NO_SUCH_ZONE), indent=2) and mars["inputError"] is None
    assert mars["resultIsError"] is True and mars["result"].startswith('Error: unknown time zone "Mars/Olympus_Mons"')
    assistant, *results = report["bodies"][1]["messages"][1:]
    assert assistant == {"role": "assistant", "content": TOOL_TEXT, "tool_calls": [
        {"id": "call_markup", "type": "function", "function": {"name": MARKUP_TOOL, "arguments": MARKUP_ARGUMENTS}},
        {"id": "call_bad", "type": "function", "function": {"name": "current_time", "arguments": BAD_ARGUMENTS}},
        {"id": "call_mars", "type": "function", "function": {"name": "current_time", "arguments": NO_SUCH_ZONE}},
    ]}
    assert results == [
        {"role": "tool", "tool_call_id": "call_markup", "content": markup["result"]},
        {"role": "tool", "tool_call_id": "call_bad", "content": bad["result"]},
        {"role": "tool", "tool_call_id": "call_mars", "content": mars["result"]},
    ]


def test_a_model_that_keeps_calling_tools_is_stopped_after_five_automatic_rounds(run_pages):
    report = tool_markup(run_pages)
    bodies, bubbles = report["bodies"], report["bubbles"]
    assert len(bodies) == 6 and len(bubbles) == 6, "the user's request and five automatic ones"
    assert [len(body["messages"]) for body in bodies] == [1 + 4 * round_ for round_ in range(6)]
    assert all(body["tools"] == [CURRENT_TIME] for body in bodies)
    last = bubbles[-1]
    assert last["outcome"] == "complete" and "after 5 rounds" in last["notice"] and last["retry"] is False
    assert [call["status"] for call in last["calls"]] == ["not run"] * 3 and all(call["result"] is None for call in last["calls"])
    *sent, last_answer = report["saved"]["entries"]
    assert sent == bodies[-1]["messages"]
    assert last_answer["content"] == TOOL_TEXT and "tool_calls" not in last_answer, "calls that were not run are not in the history"
    assert last_answer["incomplete"]["kind"] == "tool_rounds"
    assert report["sendDisabled"] is False


# --- a stream that fails -----------------------------------------------------------------


def test_an_error_event_shows_its_message_keeps_the_partial_text_and_offers_retry(run_pages):
    report = run_pages(FAILING, ("ask_once",)).report("ask_once")
    answer = report["answer"]
    assert answer["outcome"] == "error" and answer["text"] == shown("Hello")
    assert "The model stream failed." in answer["notice"] and "incomplete" in answer["notice"]
    assert answer["notice"].lower().count("fail") == 1, "not 'failed' twice"
    assert "provider detail" not in answer["notice"]
    assert answer["retry"] == {"label": "Retry", "disabled": False}


# --- a model that refuses to start ------------------------------------------------------


def test_rate_limiting_shows_the_wait_from_retry_after_and_holds_retry_until_then(run_pages):
    run = run_pages(RATE_LIMITED, ("ask_once",))
    wait = httpx.post(run.runtime.url + "/api/chat", json={"messages": [{"role": "user", "content": "hi"}]}).headers["retry-after"]
    answer = run.report("ask_once")["answer"]
    assert answer["outcome"] == "error"
    assert "busy" in answer["notice"] and f"retry in {wait} s" in answer["notice"]
    assert "too many" not in answer["notice"].lower(), "the model's capacity is not the user's fault"
    assert answer["retry"]["disabled"] is True and answer["retry"]["label"].startswith("Retry in ")


# --- a paced answer --------------------------------------------------------------------


@pytest.mark.smoke
def test_the_page_and_its_modules_are_served_by_static_assets_at_the_root(run_pages):
    run = slow_run(run_pages)
    report = run.report("answer")
    assert report["pageType"].startswith("text/html")
    for path in ("/app.js", "/chat-stream.js"):
        response = httpx.get(run.runtime.url + path)
        assert response.status_code == 200 and "javascript" in response.headers["content-type"]
        assert "export" in response.text or "import" in response.text
    # Its Content-Security-Policy (public/_headers) comes with the page and its modules.
    for path in ("/", "/app.js"):
        policy = httpx.get(run.runtime.url + path).headers["content-security-policy"]
        assert "default-src 'self'" in policy and "script-src 'self';" in policy and "img-src 'self' data:;" in policy
    assert httpx.get(run.runtime.url + "/_headers").status_code == 404  # the rules are not served


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
    assert report["first"]["text"] == shown(expected_answer(FIRST_QUESTION))
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
    assert report["bodies"][0] == {**BODY, "messages": [{"role": "user", "content": FIRST_QUESTION}]}


def test_the_conversation_so_far_is_sent_with_the_next_turn(run_pages):
    report = slow_run(run_pages).report("answer")
    second = "And if I press Stop?"
    assert report["bodies"][1] == {**BODY, "messages": [
        {"role": "user", "content": FIRST_QUESTION},
        {"role": "assistant", "content": expected_answer(FIRST_QUESTION)},
        {"role": "user", "content": second},
    ]}
    assert report["second"]["text"] == shown(expected_answer(second))
    assert report["model"] == "@cf/zai-org/glm-4.7-flash", "the model from `meta` is shown"


def test_the_controls_have_accessible_names_and_the_reply_is_a_live_region(run_pages):
    report = slow_run(run_pages).report("answer")
    assert report["labels"] == {"message": 1, "send": 1, "log": 1, "logLive": "polite"}


def test_stop_cancels_generation_upstream_and_keeps_the_partial_answer(run_pages):
    run = run_pages(SLOW_ANSWER, STOP_SCENARIOS)
    report = run.report("stop")
    stopped = report["stopped"]
    full = shown(expected_answer("Tell me a long story."))
    assert stopped["outcome"] == "cancelled" and stopped["notice"] == "Stopped."
    assert full.startswith(stopped["text"].rstrip("\n")) and 0 < len(stopped["text"]) < len(full)
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
    assert report["retried"]["text"] == shown(expected_answer("Tell me a long story."))
    assert report["bodies"] == [{**BODY, "messages": [{"role": "user", "content": "Tell me a long story."}]}] * 2
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
    assert cut["text"] == shown(expected_answer("Will this arrive whole?")), "the text that came stays"
    assert cut["retry"] == {"label": "Retry", "disabled": False}
    retried = report["retried"]
    assert retried["outcome"] == "complete" and retried["notice"] is None
    assert retried["text"] == shown(expected_answer("Will this arrive whole?"))
    assert report["bodies"][0] == report["bodies"][1] == {**BODY, "messages": [{"role": "user", "content": "Will this arrive whole?"}]}
    assert report["resumeAttempts"] == 4, "it tried to resume before calling the answer cut off"


def test_a_turn_over_the_body_limit_is_explained_and_put_back_in_the_input(run_pages):
    report = slow_run(run_pages).report("too_long")
    answer = report["answer"]
    assert answer["outcome"] == "error" and "too long" in answer["notice"]
    assert answer["retry"] is None, "resending the same text cannot help"
    assert report["inputLength"] == report["sentLength"]


def contrast(foreground: str, background: str) -> float:
    """WCAG 2's contrast ratio of two computed `rgb(r, g, b)` colours."""
    def luminance(color: str) -> float:
        channels = [int(part) / 255 for part in color[color.index("(") + 1 : color.index(")")].split(",")[:3]]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    lighter, darker = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_the_model_is_named_before_any_answer_and_settings_closes_like_a_dialog(run_pages):
    report = slow_run(run_pages).report("settings")
    assert report["model"] == "@cf/zai-org/glm-4.7-flash"  # wrangler.toml's MODEL, from GET /v1/models
    assert report["openedByClick"] is True
    assert report["afterEscape"] == {"open": False, "focusOnSummary": True}, "Escape closes it, focus goes back"
    assert report["openAfterOutsideClick"] is False, "a click outside closes it"
    assert contrast(report["send"]["color"], report["send"]["background"]) >= 4.5, report["send"]  # WCAG AA


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
    assert answer["text"] == shown(expected_answer(question)), "nothing missing, nothing twice"
    assert report["resumed"] == "1" and "reconnecting" in report["states"]
    assert report["resumes"] == [{"method": "GET", "lastEventId": report["cutAfterId"]}]
    assert len(report["bodies"]) == 1, "resuming never asks the model again"


def test_a_reload_mid_answer_picks_up_the_answer_still_being_written(run_pages):
    run = slow_run(run_pages)
    report = run.report("reload")
    full = shown(expected_answer("Tell me a long story."))
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
    assert report["answered"]["outcome"] == "complete" and report["answered"]["text"] == shown("Here is the answer.")


def test_the_token_is_sent_only_as_a_bearer_header_and_kept_in_session_storage(run_pages):
    report = thinking_run(run_pages).report("token")
    assert [request["authorization"] for request in report["sent"]] == [None, f"Bearer {TOKEN}"]
    assert all(TOKEN not in request["url"] for request in report["sent"]) and TOKEN not in report["pageUrl"]
    session, local = report["storage"]["session"], report["storage"]["local"]
    assert session["chat-access-token"] == TOKEN and local, "the chats are kept, the token is not among them"
    assert [key for key, value in session.items() if TOKEN in value] == ["chat-access-token"], "nowhere else"
    assert [key for key, value in local.items() if TOKEN in value] == []
    assert report["tokenAfterReload"] == TOKEN, "a reload of the tab keeps it"


def test_reasoning_is_a_collapsed_thinking_section_of_text_above_the_answer(run_pages):
    report = thinking_run(run_pages).report("thinking")
    assert report["thinkingBeforeAnswer"] == "", "the section appears while the model still thinks"
    assert report["answer"]["outcome"] == "complete" and report["answer"]["text"] == shown("Here is the answer.")
    assert report["sections"] == 1 and report["summary"] == "Thinking"
    assert report["openAtFirst"] is False and report["thinkingVisibleCollapsed"] is False
    assert report["openAfterClick"] is True
    assert report["thinkingText"] == shown("".join(THOUGHT)), "rendered as the answer is"
    assert (report["elementsInside"], report["pwned"]) == (["p"], 0), "markup in reasoning stays text"
    assert report["orderInItem"][:3] == ["author", "thinking", "content"]



# --- stopped and failed answers are kept; New chat ----------------------------------------


def test_a_stopped_answer_survives_a_reload_with_its_notice_and_retry_and_goes_back_as_shown(run_pages):
    report = run_pages(SLOW_ANSWER, STOP_SCENARIOS).report("stop")
    assert report["afterNewChat"] == {"messages": 0, "focus": "input"}, "New chat starts over"
    stopped, after = report["stoppedAgain"], report["afterReload"]
    assert stopped["outcome"] == "cancelled" and stopped["text"]
    assert (after["text"], after["notice"], after["retry"]) == (stopped["text"], "Stopped.", {"label": "Retry", "disabled": False})
    assert report["userMessagesAfterReload"] == ["Tell me a long story."]
    [_, kept] = report["savedStopped"]["entries"]
    assert kept["incomplete"]["kind"] == "cancelled" and expected_answer("Tell me a long story.").startswith(kept["content"])
    # The next turn: the stopped answer goes back as the text that was shown, so no two
    # user messages are ever sent in a row.
    messages = report["afterStopBody"]["messages"]
    assert messages == [{"role": "user", "content": "Tell me a long story."}, {"role": "assistant", "content": kept["content"]},
                        {"role": "user", "content": "And now?"}]
    assert report["chats"] == ["Tell me a long story.", "Tell me a long story."], "both chats are listed, newest first"


def test_a_failed_answer_survives_a_reload_and_its_notice_is_in_view(run_pages):
    report = run_pages(FAILING, ("ask_once",)).report("ask_once")
    assert report["noticeInView"] is True
    answer, after = report["answer"], report["afterReload"]
    assert (after["text"], after["notice"], after["retry"]) == (answer["text"], answer["notice"], answer["retry"])
    assert report["contrast"]["failing"] == [] and {"span.notice-text", "span.request-id", "button.retry"} <= set(report["contrast"]["kinds"]), report["contrast"]


# --- markdown --------------------------------------------------------------------------------


def markdown_run(run_pages):
    return run_pages(MARKDOWN, MARKDOWN_SCENARIOS, SCREENSHOT)


def test_a_streamed_markdown_answer_renders_each_element_while_it_streams(run_pages):
    report = markdown_run(run_pages).report("markdown")
    rendered = report["rendered"]
    assert report["answer"]["outcome"] == "complete"
    assert rendered["headings"] == ["H2 A heading"]
    assert (rendered["strong"], rendered["em"], rendered["inlineCode"]) == (1, 1, 1)
    assert rendered["bullets"] == ["first item", "second item"] and rendered["numbers"] == ["one", "two"]
    [code] = rendered["code"]
    assert (code["language"], code["text"], code["copyButton"]) == ("python", MARKDOWN_CODE, "Copy")
    assert "monospace" in code["font"] and code["whiteSpace"] == "pre" and code["scrolls"] is True, "code never wraps"
    assert rendered["table"] == [["TH Name", "TH Bytes"], ["TD café", "TD 5"], ["TD 東京", "TD 6"]]
    assert rendered["links"] == [{"text": "the docs", "href": "https://developers.cloudflare.com/workers-ai/",
                                  "target": "_blank", "rel": "noopener noreferrer"}]
    assert rendered["actions"] == ["Copy", "Regenerate"]
    assert {"h2", "li", "table", "pre"} <= set(report["whileStreaming"]), "rendered as it streams, not at the end"


def test_markdown_that_tries_to_run_script_or_load_a_resource_runs_nothing_and_loads_nothing(run_pages):
    report = markdown_run(run_pages).report("hostile")
    rendered = report["rendered"]
    assert report["answer"]["outcome"] == "complete"
    assert report["pwned"] == 0 and report["foreign"] == []
    assert report["counts"] == {"script": 0, "img": 0, "iframe": 0, "style": 0, "object": 0, "embed": 0}
    # The image's URL becomes a plain https link; every other URL stays text.
    assert rendered["links"] == [{"text": "pixel", "href": "https://images.example/pixel.png", "target": "_blank", "rel": "noopener noreferrer"}]
    text = report["answer"]["text"]
    for shown_as_text in ("<script>window.__pwned = 1</script>", "javascript:window.__pwned=3", "<iframe", "The end."):
        assert shown_as_text in text, shown_as_text
    assert set(rendered["elements"]) <= {"p", "a"}, rendered["elements"]
    # With the renderer bypassed, the Content-Security-Policy alone stops every load and script.
    unsafe = report["unsafe"]
    assert unsafe["pwned"] == 0 and unsafe["answered"] == []
    assert unsafe["requested"] and all(error == "csp" for _, error in unsafe["failed"]), unsafe
    assert sorted(url for url, _ in unsafe["failed"]) == sorted(unsafe["requested"]), unsafe
    assert {"img-src", "frame-src", "style-src-elem", "script-src-elem", "script-src-attr", "object-src"} <= set(unsafe["violations"]), unsafe


def test_copy_puts_the_code_and_the_answer_on_the_clipboard(run_pages):
    report = markdown_run(run_pages).report("markdown")
    assert report["copiedCode"] == MARKDOWN_CODE
    assert report["copiedAnswer"] == MARKDOWN_ANSWER, "the answer as markdown, as the model wrote it"
    assert report["copyLabel"] == "Copied"


def test_regenerate_answers_the_same_turn_again_in_the_same_place(run_pages):
    report = markdown_run(run_pages).report("markdown")
    first, again = report["bodies"][:2]
    assert first == again == {**BODY, "messages": [{"role": "user", "content": MARKDOWN_QUESTION}]}
    assert report["regenerated"]["outcome"] == "complete" and report["assistantAfterRegenerate"] == 1


def test_new_chat_starts_over_and_a_past_chat_is_listed_and_reopened_without_asking_again(run_pages):
    report = markdown_run(run_pages).report("markdown")
    assert report["messagesInNewChat"] == 0
    # The list is the browser's: the scenario beside this one keeps its chat there too.
    mine = [chat for chat in report["chatList"] if chat["title"] in ("Hello?", MARKDOWN_QUESTION)]
    assert mine == [{"title": "Hello?", "current": True}, {"title": MARKDOWN_QUESTION, "current": False}], report["chatList"]
    reopened = report["reopened"]
    assert reopened["menuOpen"] is False and reopened["users"] == [MARKDOWN_QUESTION]
    assert reopened["answer"]["notice"] is None
    assert len(report["bodies"]) == 3, "reopening a chat sends nothing"
    assert report["afterReload"]["users"] == [MARKDOWN_QUESTION], "a reload keeps the chat this tab has open"
    assert report["afterReload"]["rendered"]["code"] == report["rendered"]["code"]


def test_every_text_and_control_meets_wcag_aa_contrast_in_both_colour_schemes(run_pages):
    report = markdown_run(run_pages).report("markdown")
    for audit in (report["contrastLight"], report["contrastMenu"], report["contrastDark"]):
        assert audit["failing"] == [], audit["failing"]
        assert audit["checked"] >= 20
    kinds = set(report["contrastLight"]["kinds"]) | set(report["contrastMenu"]["kinds"])
    for kind in ("button.send", "button.new-chat", "button.action.copy-answer", "span.code-language", "a", "th", "button.chat-link"):
        assert kind in kinds, kind


def test_a_screenshot_of_a_rendered_answer_is_written_under_dev(run_pages):
    report = markdown_run(run_pages).report("markdown")
    assert report["screenshot"] == str(SCREENSHOT)
    header = SCREENSHOT.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == (820, 860)
    assert SCREENSHOT.stat().st_mtime >= SESSION_STARTED


# Generous bounds: a sign of a frozen page, not a speed target (docs/benchmarks.md has the
# figures: a longest gap of up to 1.2 s on a growing 2,000-row table, quiet machine). 2.5 s
# failed twice with two busy processes beside the 4-process suite (3.6 s for the table,
# issue 28); a frozen page stays frozen, so the bound is far above any loaded machine's.
FROZEN_MS = 8000


def test_nesting_a_huge_table_and_a_long_answer_never_freeze_the_page_and_lose_nothing(run_pages):
    report = run_pages(MARKDOWN, HEAVY_SCENARIOS).report("heavy")
    for name in ("deep", "table", "long", "document"):
        assert report[name]["answer"]["outcome"] == "complete", name
        assert report[name]["maxGapMs"] < FROZEN_MS, (name, report[name])
    deep = report["deep"]
    assert deep["rendered"]["plain"] is True and deep["text"].endswith("end\n"), "too deep to render: plain text, all of it"
    assert report["table"]["rendered"]["rows"] == 1 + TABLE_ROWS
    assert report["long"]["rendered"]["bullets"] == LONG_TOKENS // len(LONG_CHUNK)
    # Issue 33's 120,000-character document renders whole, as markdown, to its last table row
    # (its figures, the longest task above all, are bench/page_markdown_bench.py's).
    document = report["document"]["rendered"]
    assert len(DOCUMENT_ANSWER) > 120_000 and document["plain"] is False
    assert (document["headings"], document["codeBlocks"]) == (DOCUMENT_SECTIONS, DOCUMENT_SECTIONS)
    assert document["bullets"] == 6 * DOCUMENT_SECTIONS and document["rows"] == 1 + DOCUMENT_TABLE_ROWS
    assert report["document"]["sameAsWhole"] is True, "rendered block by block, it is what one render of the whole gives"
    # Reopened with all four in one chat, every answer is on the page again, whole (its
    # timings are the bench's too).
    reopened = report["reopened"]
    assert (reopened["chats"], reopened["answers"]) == (4, 5), reopened
    assert reopened["textLength"] >= sum(report[name]["rendered"]["textLength"] for name in ("deep", "table", "long", "document"))
    # Only the one too deep to render is plain: a reopened answer whose part is a single long
    # block (the fifth, a table, then 101 KB) is markdown to its end.
    assert sum(reopened["plain"]) == 1 and reopened["plain"][-1] is False and reopened["tables"] == 3, reopened


# --- answers that end but are not whole: cut, filtered, ended for an unknown reason, gapped --


CUT_SHORT_SCENARIOS = ("cut_continue", "cut_again", "continue_reload", "filtered", "unknown_end", "gapped", "cut_gapped")
CUT = "".join(CUT_PIECES)
CONTINUED = CUT + "".join(CONTINUATION_PIECES)
LENGTH_NOTICE = "The answer was cut off at the length limit."
GAPS_NOTICE = "Part of the model's output could not be read (1 frame), so the answer may have gaps."
COMPLETE = "The answer is complete."


def cut_short_run(run_pages):
    return run_pages(CUT_SHORT, CUT_SHORT_SCENARIOS)


def completed_record(run, request_id):
    """The Worker's log line of the answer, with the finish reason and skipped it sent."""
    return run.runtime.wait_for_record("chat_stream_completed", since=run.mark, request_id=request_id)


def test_an_answer_cut_at_the_length_limit_says_so_with_continue_and_retry_also_after_a_reload(run_pages):
    run = cut_short_run(run_pages)
    report = run.report("cut_continue")
    cut = report["cut"]
    assert completed_record(run, cut["requestId"])["finish_reason"] == "length"
    assert cut["text"] == shown(CUT), "the text that came stays"
    assert cut["notice"] == LENGTH_NOTICE and cut["notices"] == 1
    assert cut["continue"] == {"label": "Continue", "disabled": False} and cut["retry"] == {"label": "Retry", "disabled": False}
    assert cut["status"] == LENGTH_NOTICE != COMPLETE
    assert report["contrast"]["failing"] == [] and "button.continue" in report["contrast"]["kinds"], report["contrast"]
    [_, kept] = report["savedCut"]["entries"]
    assert kept["content"] == CUT and kept["incomplete"]["kind"] == "length" and kept["incomplete"]["continue"] is True
    after = report["cutAfterReload"]
    assert (after["text"], after["notice"], after["continue"], after["retry"]) == (cut["text"], cut["notice"], cut["continue"], cut["retry"])


def test_continue_sends_the_cut_answer_as_the_assistants_message_and_the_answer_goes_on_in_the_same_bubble(run_pages):
    report = cut_short_run(run_pages).report("cut_continue")
    first, continuing, _ = report["bodies"]
    assert first == {**BODY, "messages": [{"role": "user", "content": CUT_QUESTION}]}
    assert continuing == {**BODY, "messages": [
        {"role": "user", "content": CUT_QUESTION},
        {"role": "assistant", "content": CUT},
        {"role": "user", "content": CONTINUE_PROMPT},
    ]}
    during = report["whileContinuing"]
    assert during["state"] == "streaming" and during["notice"] is None and during["continue"] is None
    assert during["text"].startswith(CUT) and len(during["text"]) > len(CUT), "the continuation is appended while it streams"
    # The emulator answers CONTINUE_PROMPT, as the last user message, with the continuation.
    continued = report["continued"]
    assert continued["text"] == shown(CONTINUED) and continued["assistantMessages"] == 1, "one answer, one bubble"
    assert (continued["notice"], continued["continue"], continued["retry"]) == (None, None, None)
    assert continued["status"] == COMPLETE
    assert continued["userMessages"] == [CUT_QUESTION], "the request to go on is never shown"


def test_a_continued_answer_is_saved_joined_and_the_next_turn_sends_it_as_one_message(run_pages):
    report = cut_short_run(run_pages).report("cut_continue")
    assert report["savedContinued"] == {"entries": [{"role": "user", "content": CUT_QUESTION}, {"role": "assistant", "content": CONTINUED}],
                                        "pending": None}
    after = report["continuedAfterReload"]
    assert (after["text"], after["notice"], after["userMessages"]) == (shown(CONTINUED), None, [CUT_QUESTION])
    *_, following = report["bodies"]
    assert following["messages"] == [
        {"role": "user", "content": CUT_QUESTION},
        {"role": "assistant", "content": CONTINUED},
        {"role": "user", "content": NEXT_QUESTION},
    ], "the joined answer, and no trace of the request to go on"
    assert report["next"]["text"] == shown(NEXT_ANSWER) and report["next"]["status"] == COMPLETE


def test_a_continuation_that_cannot_reach_the_server_leaves_the_cut_answer_as_it_was_with_continue(run_pages):
    report = cut_short_run(run_pages).report("cut_again")
    unreached = report["unreached"]
    assert unreached["text"] == shown(CUT) and unreached["assistantMessages"] == 1
    assert unreached["notice"] == "Could not reach the server. Check your connection." == unreached["status"]
    assert unreached["continue"] is not None and unreached["retry"] is not None, "the answer is still cut: Continue stays"
    assert report["savedUnreached"] == report["savedCut"], "saved as it was before"
    assert report["savedCut"]["entries"][-1]["incomplete"]["notice"] == LENGTH_NOTICE


def test_a_continuation_cut_again_offers_continue_again_and_every_part_joins_one_answer(run_pages):
    report = cut_short_run(run_pages).report("cut_again")
    assert report["rewritten"] == [True]
    again = report["cutAgain"]
    assert again["text"] == shown(CONTINUED) and again["notice"] == LENGTH_NOTICE and again["status"] == LENGTH_NOTICE
    assert again["continue"] == {"label": "Continue", "disabled": False} and again["retry"] is not None
    _, unreached, first_continuation, second_continuation = report["bodies"]
    assert unreached == first_continuation and first_continuation["messages"][1] == {"role": "assistant", "content": CUT}
    assert second_continuation["messages"] == [
        {"role": "user", "content": CUT_QUESTION},
        {"role": "assistant", "content": CONTINUED},
        {"role": "user", "content": CONTINUE_PROMPT},
    ], "the answer so far, joined, goes on again"
    whole = CONTINUED + "".join(CONTINUATION_PIECES)
    continued = report["continued"]
    assert continued["text"] == shown(whole) and continued["assistantMessages"] == 1
    assert (continued["notice"], continued["status"]) == (None, COMPLETE)
    assert report["saved"]["entries"][-1] == {"role": "assistant", "content": whole}


def test_a_reload_while_an_answer_is_continued_reads_the_continuation_on_into_the_same_answer(run_pages):
    report = cut_short_run(run_pages).report("continue_reload")
    before = report["before"]
    assert before["text"].startswith(CUT) and len(CUT) < len(before["text"].rstrip("\n")) < len(CONTINUED)
    assert report["pendingBefore"]["continued"] is True
    assert report["afterReloadUsers"] == [CUT_QUESTION]
    after = report["after"]
    assert after["text"] == shown(CONTINUED) and after["requestId"] == before["requestId"], "the same continuation, read on"
    assert (after["notice"], after["assistantMessages"], after["status"]) == (None, 1, COMPLETE)
    assert len(report["bodies"]) == 2, "nothing asked again"
    assert report["saved"] == {"entries": [{"role": "user", "content": CUT_QUESTION}, {"role": "assistant", "content": CONTINUED}],
                               "pending": None}


@pytest.mark.parametrize(("scenario", "finish_reason", "skipped", "text", "notice"), [
    pytest.param("filtered", "content_filter", 0, FILTERED_TEXT, "The answer was cut short by the provider's content filter.",
                 id="content_filter"),
    pytest.param("unknown_end", "other", 0, UNKNOWN_END_TEXT, "The model ended the answer for an unknown reason; it may be incomplete.",
                 id="other: a reason the Worker does not know"),
    pytest.param("gapped", "stop", 1, "".join(GAPPED_PIECES), GAPS_NOTICE, id="stop with a frame the Worker could not read"),
])
def test_an_answer_that_is_not_whole_says_why_with_retry_and_no_continue_also_after_a_reload(run_pages, scenario, finish_reason,
                                                                                            skipped, text, notice):
    run = cut_short_run(run_pages)
    report = run.report(scenario)
    answer = report["answer"]
    record = completed_record(run, answer["requestId"])
    assert (record["finish_reason"], record["skipped"]) == (finish_reason, skipped), "what the Worker sent"
    assert answer["text"] == shown(text), "the text that came stays"
    assert answer["notice"] == notice == answer["status"] != COMPLETE
    assert answer["retry"] == {"label": "Retry", "disabled": False} and answer["continue"] is None
    after = report["afterReload"]
    assert (after["text"], after["notice"], after["retry"], after["continue"]) == (answer["text"], notice, answer["retry"], None)
    [_, kept] = report["saved"]["entries"]
    assert kept["content"] == text and kept["incomplete"]["notice"] == notice and "continue" not in kept["incomplete"]
    assert kept["incomplete"].get("skipped", 0) == skipped


def test_the_turn_after_a_filtered_answer_sends_it_back_as_it_was_shown(run_pages):
    # The model knows what it already said; the notice stays on the answer, so the user
    # knows it is not whole.
    report = cut_short_run(run_pages).report("filtered")
    assert report["bodies"][-1]["messages"] == [
        {"role": "user", "content": FILTERED_QUESTION},
        {"role": "assistant", "content": FILTERED_TEXT},
        {"role": "user", "content": NEXT_QUESTION},
    ]


def test_a_cut_answer_with_gaps_tells_both_and_a_continuation_keeps_the_gaps_told(run_pages):
    report = cut_short_run(run_pages).report("cut_gapped")
    cut = report["cut"]
    assert cut["userMessages"] == [CUT_GAPPED_QUESTION]
    assert cut["text"] == shown(CUT) and cut["notice"] == f"{LENGTH_NOTICE} {GAPS_NOTICE}" == cut["status"]
    assert cut["continue"] is not None and cut["retry"] is not None
    continued = report["continued"]
    assert continued["text"] == shown(CONTINUED) and continued["assistantMessages"] == 1
    assert continued["notice"] == GAPS_NOTICE == continued["status"], "the continuation ended whole, the first part did not"
    assert continued["continue"] is None and continued["retry"] is not None
    [_, kept] = report["saved"]["entries"]
    assert kept["content"] == CONTINUED and kept["incomplete"]["skipped"] == 1
    after = report["afterReload"]
    assert (after["text"], after["notice"]) == (continued["text"], GAPS_NOTICE)
