"""docs/protocol.md's examples are streams the Reframer could have produced."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sse import SSEEncoder
from tests.sse.support import protocol_events, stats

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
BLOCKS = re.findall(r"```text\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
SSE_EXAMPLES = [block for block in BLOCKS if block.startswith("event: ")]
NDJSON_EXAMPLES = [block for block in BLOCKS if block.startswith("{")]


def test_the_protocol_doc_has_sse_and_ndjson_examples() -> None:
    assert len(SSE_EXAMPLES) >= 2 and len(NDJSON_EXAMPLES) >= 1


@pytest.mark.parametrize("example", SSE_EXAMPLES)
def test_each_sse_example_starts_with_meta_and_ends_with_one_terminal_event(example: str) -> None:
    events = protocol_events(example.encode())
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "meta"
    assert [kind for kind in kinds if kind in ("done", "error")] == [kinds[-1]]
    if kinds[-1] == "done":
        deltas = [data["text"] for kind, data in events if kind == "delta"]
        assert events[-1][1]["chunks"] == len(deltas)
        assert events[-1][1]["chars"] == sum(map(len, deltas))
        done = events[-1][1]
        expected = SSEEncoder().done(
            stats(
                deltas=done["chunks"],
                chars=done["chars"],
                skipped=done["skipped"],
                finish_reason=done["finish_reason"],
                usage=done["usage"],
                tool_calls=done.get("tool_calls", 0),
            )
        )
        calls = [data for kind, data in events if kind == "tool_call"]
        assert done.get("tool_calls", 0) == len(calls)
        for call in calls:
            pieces = [data["arguments"] for kind, data in events if kind == "tool_call_delta" and data["index"] == call["index"]]
            assert "".join(pieces) == call["arguments"] and json.loads(call["arguments"]) == call["input"]
        # The very bytes the encoder writes (a resumable answer's adds its `id:` lines).
        assert re.sub(r"^id: \d+\n", "", example, flags=re.MULTILINE).endswith(expected)


@pytest.mark.parametrize("example", NDJSON_EXAMPLES)
def test_each_ndjson_example_is_one_typed_object_a_line(example: str) -> None:
    objects = [json.loads(line) for line in example.split("\n")[:-1]]
    assert objects[0]["type"] == "meta"
    assert objects[-1]["type"] in ("done", "error")
