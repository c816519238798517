r"""Ask the chat Worker a question and print the answer while it streams; without a
question, hold a conversation (docs/cli.md has it all).

    python clients/chat_cli [--url URL] [--model M] [--history FILE.json] [--tools FILE.json]
                            [--image FILE ...] [--cancel-after N] [--timeout S]
                            [--raw | --resume] [--token T] [--plain] [--no-reasoning] ["question"]

stdout gets the answer text as it arrives, plus a final newline when the text did not
end with one; so `... > answer.txt` keeps just the answer, byte for byte. On a terminal
the answer is rendered as markdown while it streams (MarkdownWriter, with rich; --plain
prints it as it comes), reasoning is shown dimmed before it (--no-reasoning hides it),
and the model's text never drives the terminal: each character a terminal would act on
instead of showing is written visibly escaped, as Python writes it in a string (`\x1b` is
four characters there), before any rendering:
the C0 controls but newline and tab (`\x1b`, `\x0d`, `\x08`, `\x07`...),
DEL (`\x7f`), the C1 controls (`\x9b`, a CSI on its own) and the bidi embeddings,
overrides and isolates (`\u202a`-`\u202e`, `\u2066`-`\u2069`). The marks U+200E, U+200F
and U+061C are kept: Arabic and Hebrew text needs them. Tool-call lines stay JSON: there
the same characters get JSON's own escape (`\u001b`, `\u009b`), and the line parses to the
same call. Text the model writes as `\x1b` itself looks the same: it is only text.

stderr gets exactly one status line, always the last line written there:

    complete chunks=N chars=M          exit 0   the answer ended whole: `done` ([DONE] with
                                                --raw) with finish_reason stop, tool_calls,
                                                function_call or none
    cut_short: REASON chunks=N chars=M exit 5   the answer was cut short: REASON is length
                                                (the token limit) or content_filter
    unknown_ending: REASON chunks=N chars=M
                                       exit 5   the model ended for a reason the Worker does
                                                not know (REASON other): maybe not whole
    empty chunks=0 chars=0             exit 5   the model ended whole but sent no text and
                                                no tool call
    cancelled after N chunks           exit 3   --cancel-after N: left after N chunks
    output_closed after N chunks       exit 3   stdout was closed (`| head`): left, quietly
    interrupted after N chunks         exit 130 Ctrl-C (SIGINT): left, no traceback
    stream_error: CODE                 exit 4   an `error` event, an HTTP error, or a client code:
                                                truncated, timeout, connection_failed,
                                                http_error, unexpected_response, malformed_stream

The four endings add ` tool_calls=K` when the model made K tool calls and ` skipped=S`
when S frames of the model's output could not be read (`done.skipped`), then, when the
Worker said them, ` model=M` (from `meta`), ` tokens=P+C` (`done.usage`) and, for a
complete answer, ` finish=R` (its finish_reason); the exit status
stays the ending's, and the line before the status line says
`warning: S frames of the model's output could not be read; the answer may have gaps`.
When the server gave a message (an `error` event, a JSON error body) it comes on the line
before the status line, as `error: MESSAGE (request ID[, retry after S s])`. When stderr is
a terminal these lines are written in reverse video (SGR 7), which model text cannot
produce, and always start a line of their own. Exit status 2 means bad usage or an
unreadable --history, --tools or --image file (nothing is sent then).
`chars` counts Unicode code points.
--timeout bounds the wait for each next event; `: ping` keep-alives do not count as events.
--token defaults to the CHAT_TOKEN environment variable (a flag shows up in `ps`).

--history FILE.json holds the conversation so far (missing: a new one): its turns are sent
before the question, and a complete answer appends the question and the answer to it, so
the next run goes on from there (skipped frames or not). A turn that did not complete is
not written: neither a cut-short or empty one nor one that ended for an unknown reason.

--raw reads Workers AI's own frames: the last finish_reason of OpenAI-style chunks is read
as above (with other servers' names for the same endings: max_tokens is length, eos and
end_turn are stop; "error" is `stream_error: generation_failed`), a frame that is not a
JSON object is counted as skipped, and an in-band error object (`{"error": ...}`) is
`stream_error: generation_failed`. Native frames carry no finish_reason: their answers
end `complete`.

--resume asks for a resumable answer: when the connection drops (or no event comes for
--timeout seconds) the client reconnects with Last-Event-ID and goes on where it left off,
up to RESUME_ATTEMPTS times in a row, and the status line ends with `resumed=K`, the
number of reconnections. With --cancel-after, Ctrl-C or a closed stdout the answer is
stopped on the server (DELETE): leaving alone would not stop a resumable answer.

--tools FILE.json offers the model tools: a JSON list in OpenAI's function-tool shape
(`[{"type": "function", "function": {"name": ..., "parameters": {...}}}]`), or an object
with "tools". The client does not run them: each call the model makes is printed on stdout,
when it is complete, as one JSON line on its own,

    {"tool_call": {"id": "call_1", "name": "current_time", "arguments": "{\"timezone\":\"UTC\"}", "input": {"timezone": "UTC"}}}

with `"input": null` and an `input_error` when the arguments are not a JSON object. A history
file may hold earlier calls and results (assistant messages with `tool_calls`, `tool`
messages with `tool_call_id`): they are sent as they are.

--image FILE (repeatable) attaches an image to the question: the user message becomes a
list of OpenAI content parts, the question's text part first, then one part per image in
the order given, `{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}`,
its media type the one the bytes show. Each file is checked before anything is sent, by
the Worker's own reader (src/chat/api/images.py, imported from the repository, and only
when a run has images): a PNG, JPEG, WebP or GIF, sniffed from the bytes, its header whole,
at most MAX_IMAGE_BYTES (5 MiB) each, MAX_REQUEST_IMAGE_BYTES (6 MiB) in all, MAX_IMAGES (8),
MAX_IMAGE_SIDE (8192) pixels a side and MAX_IMAGE_PIXELS (4096*4096) in all. A file past one
is a usage error naming it (exit 2). The history file keeps each image as its data URL,
with its file name (`"filename"`, not sent). Each request holds at most the Worker's bounds
however long the conversation: its images, the question's first, then the history's
newest first, are sent while they fit (8 images, 6 MiB); from the first that does not,
each older one is sent as a text part in its place, "[image not re-sent: cat.png, a 3×2 PNG]".
"""

# The package's modules, each one concern: `defaults` (bounds, exit statuses), `terminal`
# (writing an answer, escaped, rendered as markdown), `stream` (reading the event stream),
# `request` (sending a turn, resuming, cancelling), `inputs` (history, images, tools) and
# `command` (the command line, a conversation, main). `python clients/chat_cli` runs it.
from clients.chat_cli import command
from clients.chat_cli.command import main
from clients.chat_cli.defaults import MAX_LINE_CHARS
from clients.chat_cli.inputs import HistoryError, read_history, read_images, read_tools, sendable, user_message
from clients.chat_cli.request import Deadline, ask, read_answer
from clients.chat_cli.stream import Event, Outcome, ProtocolReader, RawReader
from clients.chat_cli.terminal import AnswerWriter, MarkdownWriter, visible

__all__ = [
    "MAX_LINE_CHARS", "AnswerWriter", "Deadline", "Event", "HistoryError", "MarkdownWriter", "Outcome", "ProtocolReader",
    "RawReader", "ask", "command", "main", "read_answer", "read_history", "read_images", "read_tools", "sendable",
    "user_message", "visible",
]
