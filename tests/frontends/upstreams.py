"""The scripted Workers AI upstreams the frontend tests run against, shared by the page
and CLI tests so that both reuse the same runtimes (each start costs seconds)."""

from __future__ import annotations

import json

from tests.harness.runtime import RuntimeOptions
from tests.harness.scenarios import (
    done_frame,
    echo,
    error,
    held,
    native_frame,
    openai_chunk,
    repeat,
    script,
    scripted_options,
    send,
    sleep,
    usage_frame,
    workers_ai_chunk,
)

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
# The page scenario "answer" presses Enter while its first answer streams: the answer waits,
# after its first pieces, until the driver releases FIRST_HELD (page_driver.mjs), so it is
# still being written then however slow the machine (issue 28: it had ended first, and the
# second turn was sent).
FIRST_QUESTION = "How does the answer reach this page?\nBriefly, please."
FIRST_HELD = "first-answer-typed-ahead"
# Two tabs on one chat (page scenario "two_tabs"): tab A's long answer waits after its first
# piece until the driver releases TWO_TABS_HELD, while tab B asks and gets a quick answer.
TWO_TABS_HELD = "two-tabs-long-answer"
QUICK_ANSWER = "A quick answer."
TWO_TABS = scripted_options(
    [native_frame(QUICK_ANSWER), done_frame()],
    prompts={LONG_STORY: script([native_frame("Once"), held(TWO_TABS_HELD), native_frame(" upon a time."), done_frame()])},
)
_STORY_STEPS = story_steps(STEP_MS)
SLOW_ANSWER = scripted_options(
    _STORY_STEPS,
    prompts={LONG_STORY: script(story_steps(3 * STEP_MS)), FIRST_QUESTION: script([*_STORY_STEPS[:7], held(FIRST_HELD), *_STORY_STEPS[7:]])},
    # An operator's small limits: a few turns go over MAX_MESSAGES, and a turn of 70,000
    # characters over MAX_BODY_BYTES (the default is sized to the models: 2 MB).
    variables={"MAX_MESSAGES": "3", "MAX_BODY_BYTES": "65536"},
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
# must stay text) before it answers. Asked THINK_QUESTION, the answer waits after the thought
# until the driver releases THOUGHT_HELD, so the page is seen while the model still thinks
# however slow the machine (CI had the answer in before the driver looked).
TOKEN = "page-s3cret"
THOUGHT = ("Let me think", " about <b>this</b><img src=x onerror=\"window.__pwned=1\">", " carefully.")
THINK_QUESTION = "Think first."
THOUGHT_HELD = "thought-before-answer"
_THOUGHT_STEPS = [step for piece in THOUGHT for step in (reasoning_frame(piece), sleep(STEP_MS))]
_ANSWER_STEPS = [native_frame("Here is the answer."), done_frame()]
THINKING = scripted_options(
    [*_THOUGHT_STEPS, *_ANSWER_STEPS],
    prompts={THINK_QUESTION: script([*_THOUGHT_STEPS, held(THOUGHT_HELD), *_ANSWER_STEPS])},
    variables={"AUTH_TOKEN": TOKEN},
)


# --- tool calls ---------------------------------------------------------------------------

# The page's built-in tool (public/tools.js) and what the emulator makes of it: a question
# with a word of 4+ letters of the tool's name ("current", "time") makes the model call it,
# with the schema's examples[0] as arguments; a tool result makes its answer start with
# "Tool result: " and the result's first 60 characters (ai_emulator/tools.js; the quote: prose.js).
TOOL_QUESTION = "What is the current time in UTC?"
# Its definition, exactly as the page sends it with every request (the CLI's tests offer
# the same).
CURRENT_TIME = {"type": "function", "function": {
    "name": "current_time",
    "description": "The current date and time in a time zone, from the user's clock. Use it whenever the answer depends on today's date or the time of day.",
    "parameters": {
        "type": "object",
        "properties": {"timezone": {
            "type": "string",
            "description": 'An IANA time zone name, such as "Europe/Paris", "America/New_York" or "UTC".',
            "examples": ["UTC"],
        }},
        "required": ["timezone"],
        "additionalProperties": False,
    },
}}
# Every model in its own framing (GLM: OpenAI-style chunks, thinking first), unpaced; the
# same runtime as tests/runtime/test_catalog.py's.
GENERATED = RuntimeOptions(ai_format=None, ai_pace=0)


def tool_chunk(index: int, *, call_id: str | None = None, name: str | None = None, arguments: str = "") -> dict:
    """An OpenAI-style chunk with one entry of `delta.tool_calls`: a call's start (id, type
    and name) when `call_id` is given, else a fragment of its arguments."""
    function: dict = {"arguments": arguments}
    entry: dict = {"index": index, "function": function}
    if call_id is not None:
        entry.update(id=call_id, type="function")
        function["name"] = name
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": [entry]}, "finish_reason": None}]}
    return send("data: " + json.dumps(chunk) + "\n\n")


# A model that says a few words, then calls three tools on every turn: one with markup for
# a name and in its arguments (which must stay text), streamed slowly enough to watch the
# arguments grow; the page's own with arguments that are not JSON; and the page's own for a
# zone that does not exist. The page can run none of them, sends the errors back, and the
# model calls them again, until the page's bound on automatic rounds stops it.
MARKUP_TOOL = '<img src=x onerror="window.__pwned=1">'
MARKUP_NOTE = '<img src=x onerror="window.__pwned=2"><b>bold</b>'
MARKUP_ARGUMENTS = json.dumps({"note": MARKUP_NOTE})
BAD_ARGUMENTS = '{"timezone": <b>UTC'
NO_SUCH_ZONE = '{"timezone": "Mars/Olympus_Mons"}'
TOOL_TEXT = "Let me check."
MARKUP_CALLS = scripted_options([
    openai_chunk(TOOL_TEXT),
    tool_chunk(0, call_id="call_markup", name=MARKUP_TOOL),
    *(step for piece in (MARKUP_ARGUMENTS[:20], MARKUP_ARGUMENTS[20:40], MARKUP_ARGUMENTS[40:]) for step in (sleep(STEP_MS), tool_chunk(0, arguments=piece))),
    tool_chunk(1, call_id="call_bad", name="current_time"),
    tool_chunk(1, arguments=BAD_ARGUMENTS),
    tool_chunk(2, call_id="call_mars", name="current_time"),
    tool_chunk(2, arguments=NO_SUCH_ZONE),
    openai_chunk(finish_reason="tool_calls"),
    done_frame(),
])


# --- markdown -------------------------------------------------------------------------------


def shown(markdown: str) -> str:
    """What the page shows (an answer's textContent) for markdown made of plain paragraphs:
    each paragraph is a block of its own, followed by a line break."""
    return "".join(paragraph + "\n" for paragraph in markdown.split("\n\n") if paragraph)


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def streamed(text: str, *, size: int = 12, step_ms: int = 10) -> list[dict]:
    """`text` as a model streams it: small pieces, a pause between them."""
    return [step for piece in pieces(text, size) for step in (native_frame(piece), sleep(step_ms))] + [done_frame()]


# An answer with every element the page renders, streamed in small pieces.
MARKDOWN_QUESTION = "Show me markdown."
MARKDOWN_CODE = 'def greet(name):\n    return f"Hello, {name}!"  # a long line that must not wrap, however narrow the page is\n'
MARKDOWN_ANSWER = (
    "## A heading\n\nSome **bold**, some *emphasis* and `inline code`.\n\n"
    "- first item\n- second item\n\n1. one\n2. two\n\n"
    f"```python\n{MARKDOWN_CODE}```\n\n"
    "| Name | Bytes |\n|---|---|\n| café | 5 |\n| 東京 | 6 |\n\n"
    "See [the docs](https://developers.cloudflare.com/workers-ai/) for more.\n"
)
# Markdown that tries to run script or load something: raw HTML, script links, data URLs,
# an image, an http link (only https links are made).
HOSTILE_QUESTION = "Show me hostile markdown."
HOSTILE_ANSWER = (
    '<script>window.__pwned = 1</script>\n\n<img src=x onerror="window.__pwned = 2">\n\n'
    "[run](javascript:window.__pwned=3) [data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) "
    "[vb](vbscript:msgbox) [plain](http://insecure.example/) <javascript:alert(1)>\n\n"
    "![pixel](https://images.example/pixel.png) ![inline](data:image/png;base64,iVBORw0KGgo=)\n\n"
    '<a href="javascript:window.__pwned=4">html link</a> <iframe src="https://frames.example/"></iframe>\n\n'
    "<style>body { display: none }</style>\n\nThe end.\n"
)
# Pathological shapes: 10,000 nested list items, blockquotes and brackets in one answer, a
# table of 2,000 rows, and a 10,000-token answer streamed unpaced (a measured re-render).
DEEP_QUESTION = "Nest deeply."
DEEP_ANSWER = "- " * 10_000 + "deep\n\n" + ">" * 10_000 + " quoted\n\n" + "[" * 10_000 + "end\n"
TABLE_QUESTION = "A huge table."
TABLE_ROWS = 2000
TABLE_ANSWER = "| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n" + "".join(
    f"| {row} | café | 東京 | x | y | z |\n" for row in range(TABLE_ROWS))
LONG_QUESTION = "A long answer, please."
LONG_TOKENS = 10_000
# One network chunk of eight one-token frames: a paragraph, then a list item.
LONG_CHUNK = ["Words", " with **bold**", " and `code`", " café", " 東京.", "\n\n", "- item", " ✓\n\n"]
LONG_ANSWER = "".join(LONG_CHUNK) * (LONG_TOKENS // len(LONG_CHUNK))


# Issue 33's long answer: a markdown document of about 120,000 characters (52 sections of
# prose, a list and a code block each, then a 300-row table), streamed in pieces of 40
# characters with a 5 ms pause after every two: about 400 pieces a second.
DOCUMENT_QUESTION = "A long document, please."
DOCUMENT_SECTIONS = 52
DOCUMENT_TABLE_ROWS = 300
DOCUMENT_ANSWER = "".join(
    f"## Section {k}\n\n" + ("Prose about streams, with **bold** words, `inline code` and a café in 東京. " * 22) + "\n\n"
    + "".join(f"- point {k}.{i}, said plainly\n" for i in range(6)) + "\n"
    + "```python\n" + "".join(f"def step_{k}_{i}(value):\n    return value * {i}  # section {k}\n" for i in range(6)) + "```\n\n"
    for k in range(DOCUMENT_SECTIONS)
) + "| row | name | city | value |\n|---|---|---|---|\n" + "".join(
    f"| {row} | café {row} | 東京 | {row * 7} |\n" for row in range(DOCUMENT_TABLE_ROWS))


def document_steps() -> list[dict]:
    chunks = pieces(DOCUMENT_ANSWER, 40)
    steps: list[dict] = []
    for at in range(0, len(chunks), 2):
        steps += [native_frame(piece) for piece in chunks[at : at + 2]] + [sleep(5)]
    return steps + [done_frame()]


def native_frames(texts: list[str]) -> str:
    """Frames carrying `texts`, as one network chunk."""
    return "".join("data: " + json.dumps({"response": text, "p": "pad"}) + "\n\n" for text in texts)


MARKDOWN = scripted_options(
    story_steps(STEP_MS),
    prompts={
        MARKDOWN_QUESTION: script(streamed(MARKDOWN_ANSWER)),
        HOSTILE_QUESTION: script(streamed(HOSTILE_ANSWER, size=40, step_ms=5)),
        DEEP_QUESTION: script(streamed(DEEP_ANSWER, size=2000, step_ms=5)),
        TABLE_QUESTION: script(streamed(TABLE_ANSWER, size=1500, step_ms=5)),
        LONG_QUESTION: script([repeat(LONG_TOKENS // len(LONG_CHUNK), native_frames(LONG_CHUNK)), done_frame()]),
        DOCUMENT_QUESTION: script(document_steps()),
    },
)


# --- answers that end but are not whole (issue 27) ------------------------------------------

# What the page's Continue sends as the last user message (public/app.js's CONTINUE_PROMPT).
# The emulator picks a script by the last user message, so CONTINUATION_PIECES answer every
# continuation on this runtime.
CONTINUE_PROMPT = "Continue exactly where you stopped, mid-sentence if need be. Do not repeat anything and do not add an introduction."
CUT_QUESTION = "Tell me how the stream ends."
CUT_PIECES = ("The Worker reads", " the model's stream", " and re-frames each")
# The first piece at once, the rest paced: a reload after the first piece lands while the
# continuation is still being written, as LONG_STORY does for a whole answer.
CONTINUATION_PIECES = (" piece as a delta", " event, so the answer", " appears while", " it is written,", " and every stream",
                       " ends with done", " or error.")
CUT_SHORT_MS = 300
FILTERED_QUESTION = "Tell me what the filter stops."
FILTERED_TEXT = "Here is the start of"
UNKNOWN_END_QUESTION = "End for a reason of your own."
UNKNOWN_END_TEXT = "I will stop here"
# Anthropic's stop_reason for a turn it paused, which the Worker does not map: "other".
UNKNOWN_FINISH_REASON = "pause_turn"
GAPPED_QUESTION = "Answer with a gap."
GAPPED_PIECES = ("Before the gap.", " After the gap.")
CUT_GAPPED_QUESTION = "Answer with a gap and run out."
NEXT_QUESTION = "And then?"
NEXT_ANSWER = "Noted."
# A frame the Worker cannot read (not JSON): skipped and counted in done.skipped.
UNREADABLE = send("data: {not json\n\n")


def ending(text_pieces: tuple[str, ...], finish_reason: str, *, gap_after: int | None = None, step_ms: int = 0) -> list[dict]:
    """An answer as Workers AI streams it for most current models (OpenAI-style chunks,
    the finish reason on the last), with an unreadable frame after piece `gap_after`."""
    steps: list[dict] = []
    for number, piece in enumerate(text_pieces):
        if number and step_ms:
            steps.append(sleep(step_ms))
        steps.append(workers_ai_chunk(number + 1, content=piece))
        if number == gap_after:
            steps.append(UNREADABLE)
    return [*steps, workers_ai_chunk(len(text_pieces) + 1, finish_reason=finish_reason), done_frame()]


# The continuation that a reload must find still being written (page_driver.mjs's
# continue_reload marks its Continue request so): held after its first piece until the
# driver has reloaded, however busy the machine (a paced one ended first under load).
HELD_CONTINUE_PROMPT = CONTINUE_PROMPT + " [held]"
HELD_CONTINUATION = "continue-reload"
_CONTINUATION = ending(CONTINUATION_PIECES, "stop")

CUT_SHORT = scripted_options(
    [native_frame(NEXT_ANSWER), done_frame()],
    prompts={
        CUT_QUESTION: script(ending(CUT_PIECES, "length")),
        CONTINUE_PROMPT: script(ending(CONTINUATION_PIECES, "stop", step_ms=CUT_SHORT_MS)),
        HELD_CONTINUE_PROMPT: script([_CONTINUATION[0], held(HELD_CONTINUATION), *_CONTINUATION[1:]]),
        FILTERED_QUESTION: script(ending((FILTERED_TEXT,), "content_filter")),
        UNKNOWN_END_QUESTION: script(ending((UNKNOWN_END_TEXT,), UNKNOWN_FINISH_REASON)),
        GAPPED_QUESTION: script(ending(GAPPED_PIECES, "stop", gap_after=0)),
        CUT_GAPPED_QUESTION: script(ending(CUT_PIECES, "length", gap_after=1)),
    },
)
