"""The OpenAPI description (docs/openapi.yaml) checked against one local runtime by
schemathesis. Its own file, so that pytest-xdist runs it beside the load test, not after it."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.harness.runtime import ROOT, LocalRuntime, RuntimeOptions

FULL = os.environ.get("RELIABILITY_SCALE") == "full"


@pytest.mark.heavy
def test_the_api_matches_its_openapi_description_under_schemathesis(start_runtime):
    # Its own runtime: schemathesis's thousands of requests start from a runtime in a known state.
    runtime: LocalRuntime = start_runtime(RuntimeOptions(ai_pace=0, ai_reply_tokens=20, isolated=True))
    # Every operation in every run, with few examples each: `make fuzz` (RELIABILITY_SCALE=full)
    # draws a hundred each, for looking rather than for checking a change (docs/testing.md).
    examples = "100" if FULL else "10"
    result = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "st"), "--config-file", str(ROOT / "tests" / "reliability" / "schemathesis.toml"), "run", str(ROOT / "docs" / "openapi.yaml"), "--url", runtime.url,
         "--checks", "all", "--exclude-checks", "positive_data_acceptance",
         "--max-examples", examples, "--generation-deterministic", "--request-timeout", "30", "--no-color"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert "passed" in result.stdout
