"""The scripted Workers AI upstreams the frontend tests run against, shared by the page
and CLI tests so that both reuse the same runtimes (each start costs seconds)."""

from __future__ import annotations

import json

from tests.runtime.scripts import done_frame, echo, error, native_frame, script, scripted_options, send, sleep, usage_frame

STEP_MS = 100

# A readable answer, for the screenshot as much as for the assertions.
STORY = (
    "The Worker reads", " the model's stream,", " re-frames each piece", " as a delta event", " and sends it on",
    " at once,", " so the answer appears", " while it is written.", " Every stream ends", " with done or error,",
    " so a cut-off answer", " is never mistaken", " for a complete one.",
)


def expected_answer(question: str) -> str:
    return f'You asked: "{question}".\n\n' + "".join(STORY)


def story_steps(step_ms: int) -> list[dict]:
    return (
        [native_frame('You asked: "'), echo(), native_frame('".\n\n')]
        + [step for piece in STORY for step in (sleep(step_ms), native_frame(piece))]
        + [usage_frame(9, 17), done_frame()]
    )


# Echoes the question (so markup in it comes back as model output), then the story, one
# piece every STEP_MS: about 1.3 s from the first text to `done`. At most three messages
# a conversation, so the CLI's history test can show its history is sent (the page's
# longest conversation has three). LONG_STORY, asked by the tests that stop or reload
# mid-answer, takes about 4 s, so that on a loaded machine the stop still lands while the
# model is writing.
LONG_STORY = "Tell me a long story."
SLOW_ANSWER = scripted_options(
    story_steps(STEP_MS),
    prompts={LONG_STORY: script(story_steps(3 * STEP_MS))},
    variables={"MAX_MESSAGES": "3"},
)
MAX_MESSAGES = 3
SLOW_ANSWER_CHUNKS = 3 + len(STORY)

# Some text, then silence with keep-alive pings, then the model's stream fails.
FAILING = scripted_options(
    [native_frame("Hello"), sleep(1500), error("provider detail 42")],
    variables={"PING_INTERVAL_MS": "200"},
)

# The model refuses to start: a 429 with Retry-After before any stream.
RATE_LIMITED = scripted_options(fail_start="3040: Capacity temporarily exceeded")


def reasoning_frame(text: str) -> dict:
    """An OpenAI-style chunk carrying reasoning, as reasoning models stream it."""
    return send("data: " + json.dumps({"choices": [{"index": 0, "delta": {"reasoning_content": text}}]}) + "\n\n")


# A Worker that requires a token, with a model that thinks aloud (markup included, which
# must stay text) before it answers.
TOKEN = "page-s3cret"
THOUGHT = ("Let me think", " about <b>this</b><img src=x onerror=\"window.__pwned=1\">", " carefully.")
THINKING = scripted_options(
    [*(step for piece in THOUGHT for step in (reasoning_frame(piece), sleep(STEP_MS))), native_frame("Here is the answer."), done_frame()],
    variables={"AUTH_TOKEN": TOKEN},
)
