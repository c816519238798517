"""The check of a JSON-mode answer before it is reported finished (sse.AnswerCheck).

The Worker reports `done` only for what the client asked for: in any JSON mode the whole
answer must parse as JSON (an object for `json_object`), and under a strict schema it
must follow the schema. It keeps the answer's text to check it at the end: a copy of what
the client is sent, bounded by MAX_CHECKED_CHARS; the stream is not held back for it.
"""

from __future__ import annotations

from chat.output.schema import CompiledSchema, checked_schema, parse_json_answer
from chat.turn import OutputFormat

# About 250,000 tokens of JSON: past the largest answer a current model's budget allows
# (MAX_TOKENS is at most the context window, 262,144 tokens for most), while a copy of it
# (up to 4 bytes a character in Pyodide's strings) stays a small part of a 128 MB isolate.
MAX_CHECKED_CHARS = 1_000_000


class JsonAnswerCheck:
    """Collects an answer's text and judges it once whole."""

    def __init__(self, output: OutputFormat, *, tools_offered: bool = False) -> None:
        self.tools_offered = tools_offered
        self._object_only = output.kind == "json_object"
        self._schema: CompiledSchema | None = None
        if output.kind == "json_schema" and output.strict and output.schema is not None:
            # Checked when the request was read; compiled again here, where the answer is
            # made (a resumable answer's Durable Object receives the schema as JSON).
            self._schema = checked_schema(output.schema, "response_format.json_schema.schema", strict=True)
        self._pieces: list[str] = []
        self._chars = 0
        self.violation: str | None = None
        """Why the answer was rejected, for a log (never the answer's own text)."""

    def feed(self, text: str) -> None:
        self._chars += len(text)
        if self._chars <= MAX_CHECKED_CHARS:
            self._pieces.append(text)
        else:
            self._pieces.clear()  # past the bound it cannot be checked: nothing is kept

    def verdict(self) -> str | None:
        if self._chars > MAX_CHECKED_CHARS:
            self.violation = f"over {MAX_CHECKED_CHARS} characters"
            return "output_too_large"
        text = "".join(self._pieces)
        self._pieces.clear()
        value, problem = parse_json_answer(text)
        if problem is not None:
            self.violation = problem
            return "output_not_json"
        if self._object_only and not isinstance(value, dict):
            self.violation = "not an object"
            return "output_not_json"
        if self._schema is not None:
            self.violation = self._schema.violation(value)
            if self.violation is not None:
                return "output_schema_mismatch"
        return None


def answer_check(output: OutputFormat | None, *, tools_offered: bool = False) -> JsonAnswerCheck | None:
    """The check for a turn's output format; None for text, which is never checked."""
    return None if output is None or output.kind == "text" else JsonAnswerCheck(output, tools_offered=tools_offered)
