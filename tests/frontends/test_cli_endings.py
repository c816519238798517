"""How an answer ended, as clients/chat_cli tells it: a whole answer, one cut short (at
the length limit or by the content filter), one that ended for a reason nobody knows, one
with frames that could not be read, one that failed. Through /api/chat and --raw, against
the real runtime with scripted models (tests/frontends/cli_scenarios.py)."""

from __future__ import annotations

import json
import re

import pytest

from tests.frontends.cli_scenarios import (
    CLI_SCENARIOS,
    CUT_AT_LENGTH,
    FAILED,
    FILTERED,
    GAPPED,
    GAPPED_AND_CUT,
    IN_BAND_ERROR,
    STOPPED,
    UNKNOWN_ENDING,
)
from tests.frontends.conftest import ending, run_cli

GAP_WARNING = "warning: 1 frame of the model's output could not be read; the answer may have gaps"
FAILED_MESSAGE = "error: The model stream failed. (request ID)"


def without_request_ids(stderr: str) -> list[str]:
    """stderr's lines, the request ids and the status line's details (test_cli.py) left out."""
    return [ending(line) for line in re.sub(r"\(request [0-9a-f]+\)", "(request ID)", stderr).split("\n")[:-1]]


SAME = object()  # --raw prints what /api/chat does
# How each scenario ends: its exit code, stdout, and stderr through /api/chat and with --raw
# (SAME, or None where --raw is not asked: a raw stream that fails is cut, test_cli.py's
# truncated case).
EXPECTED = {
    "stop": (STOPPED, 0, "The whole answer.\n", ["complete chunks=1 chars=17"], SAME),
    "length": (CUT_AT_LENGTH, 5, "The answer is\n", ["cut_short: length chunks=1 chars=13"], SAME),
    "content-filter": (FILTERED, 5, "Well,\n", ["cut_short: content_filter chunks=1 chars=5"], SAME),
    # The Worker says "other"; raw frames are the model's own, and its word is shown.
    "unknown-reason": (UNKNOWN_ENDING, 5, "Hmm.\n", ["unknown_ending: other chunks=1 chars=4"], ["unknown_ending: weird chunks=1 chars=4"]),
    "skipped": (GAPPED, 0, "Hello\n", [GAP_WARNING, "complete chunks=2 chars=5 skipped=1"], SAME),
    "skipped-and-length": (GAPPED_AND_CUT, 5, "Half\n", [GAP_WARNING, "cut_short: length chunks=1 chars=4 skipped=1"], SAME),
    "error-event": (FAILED, 4, "Hello\n", [FAILED_MESSAGE, "stream_error: generation_failed"], None),
    # Raw, the error's text is the provider's: no message line.
    "in-band-error": (IN_BAND_ERROR, 4, "Partial\n", [FAILED_MESSAGE, "stream_error: generation_failed"], ["stream_error: generation_failed"]),
}
CASES = [
    pytest.param(question, raw, exit_code, stdout, raw_stderr if raw and raw_stderr is not SAME else chat, id=f"{'raw' if raw else 'api-chat'}-{name}")
    for raw in (False, True)
    for name, (question, exit_code, stdout, chat, raw_stderr) in EXPECTED.items()
    if not (raw and raw_stderr is None)
]


@pytest.mark.parametrize(("question", "raw", "exit_code", "stdout", "stderr"), CASES)
def test_how_the_answer_ended_is_its_status_line_and_its_exit_code(start_runtime, question, raw, exit_code, stdout, stderr):
    runtime = start_runtime(CLI_SCENARIOS)
    result = run_cli("--url", runtime.url, *(["--raw"] if raw else []), question)
    assert (result.exit_code, result.stdout, without_request_ids(result.stderr)) == (exit_code, stdout, stderr)


@pytest.mark.parametrize(("question", "written"), [
    pytest.param(STOPPED, "The whole answer.", id="whole"),
    pytest.param(GAPPED, "Hello", id="whole-with-a-gap"),
    pytest.param(CUT_AT_LENGTH, None, id="cut-short"),
    pytest.param(FILTERED, None, id="filtered"),
    pytest.param(UNKNOWN_ENDING, None, id="unknown-reason"),
])
def test_only_an_answer_that_ended_whole_is_appended_to_the_history(start_runtime, tmp_path, question, written):
    runtime = start_runtime(CLI_SCENARIOS)
    path = tmp_path / "conversation.json"
    result = run_cli("--url", runtime.url, "--history", str(path), question)
    assert result.exit_code == (0 if written is not None else 5), result.stderr
    if written is None:
        assert not path.exists(), "a turn that did not end whole is not written"
    else:
        assert json.loads(path.read_text()) == [{"role": "user", "content": question}, {"role": "assistant", "content": written}]
