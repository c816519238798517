"""The production-like runtime: workerd run directly on a configuration generated from
wrangler.toml (devtools/workerd_direct.py), as the CPU benchmark uses it."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from devtools.dev import ROOT
from devtools.workerd_direct import capnp_string, emulator_modules, launcher_args, worker_modules, workerd_config
from tests.harness.client import chat
from tests.harness.processes import workerd_cpu_seconds, workerd_pids
from tests.harness.runtime import RuntimeOptions

PRODUCTION = tomllib.loads((ROOT / "wrangler.toml").read_text())

# Every character class the Cap'n Proto string escaping handles, carried by MODEL into the
# `meta` event, so a mangled binding shows in the answer.
AWKWARD = 'm "q" \\ é 東京 🚀\ttab\x01\x7f7\r\nend'
FALLBACK = "@cf/google/gemma-4-26b-a4b-it"


def config(*argv: str) -> str:
    return workerd_config(PRODUCTION, launcher_args(list(argv)))


def test_the_worker_is_every_python_file_under_src_with_entry_first():
    names = [name for name, kind, _ in worker_modules(ROOT / "src" / "entry.py") if kind == "pythonModule"]
    expected = sorted(p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src").rglob("*.py") if "__pycache__" not in p.parts)
    assert names[0] == "entry.py"
    assert sorted(names) == expected


def test_the_es_modules_python_imports_are_bundled_as_wrangler_does():
    scripts = [name for name, kind, _ in worker_modules(ROOT / "src" / "entry.py") if kind == "esModule"]
    assert scripts == ["chat/stream/relay.mjs"]
    rules = PRODUCTION["rules"]
    assert {"type": "ESModule", "globs": ["**/*.mjs"]} in rules


def test_the_emulator_is_every_es_module_of_its_folder_with_its_entry_first_and_each_import_among_them():
    modules = emulator_modules()
    names = [name for name, _, _ in modules]
    assert names[0] == "emulator.js"
    assert sorted(names) == sorted(p.relative_to(ROOT / "ai_emulator").as_posix() for p in (ROOT / "ai_emulator").rglob("*.js"))
    assert {kind for _, kind, _ in modules} == {"esModule"}
    imported = {specifier for _, _, source in modules for specifier in re.findall(r'^import .* from "\./([^"]+)";$', source, re.MULTILINE)}
    assert imported == set(names[1:])  # every module is imported by some other, and nothing else is


def test_the_config_carries_wrangler_tomls_flags_vars_and_the_development_flag():
    text = config()
    for flag in [*PRODUCTION["compatibility_flags"], "python_workers_development"]:
        assert capnp_string(flag) in text
    assert f"compatibilityDate = {capnp_string(PRODUCTION['compatibility_date'])}" in text
    # The launchers open /v1 locally (OPENAI_API_PUBLIC, wrangler.toml's "false" otherwise).
    local = {**PRODUCTION["vars"], "OPENAI_API_PUBLIC": "true"}
    for key, value in local.items():
        assert f"(name = {capnp_string(key)}, text = {capnp_string(value)})" in text
    assert '(name = "AI", service = "workers-ai-emulator")' in text
    assert '(name = "RATE_LIMITER", wrapped = (moduleName = "rate-limiter:binding"' in text


def test_options_reach_the_emulator_and_the_limiter_as_dev_py_passes_them():
    text = config("--ai-pace", "0", "--ai-reply-tokens", "1000", "--ai-frames-per-chunk", "1", "--rate-limit", "7",
                  "--var", "MAX_TOKENS:2048")
    for setting in ('"AI_TOKENS_PER_SECOND", text = "0"', '"AI_REPLY_TOKENS", text = "1000"',
                    '"AI_FRAMES_PER_CHUNK", text = "1"', '"LIMIT", text = "7"', '"MAX_TOKENS", text = "2048"'):
        assert setting in text
    without = config("--rate-limit", "0")
    assert "(name = \"RATE_LIMITER\"" not in without and "rate-limiter" not in without


def test_a_binding_it_cannot_serve_is_refused_not_left_out():
    with pytest.raises(SystemExit, match="kv_namespaces"):
        workerd_config({**PRODUCTION, "kv_namespaces": [{"binding": "KV", "id": "x"}]}, launcher_args([]))


@pytest.mark.expected_errors("model_not_served")
async def test_workerd_alone_streams_a_whole_answer_and_passes_raw_through(start_runtime, http):
    # No model has that name: Workers AI (the emulator) refuses it, and the fallback answers.
    variables = (("MODEL", AWKWARD), ("ALLOW_UNLISTED_MODELS", "true"), ("FALLBACK_MODELS", FALLBACK))
    runtime = start_runtime(RuntimeOptions(workerd_direct=True, ai_pace=0, variables=variables))
    messages = {"messages": [{"role": "user", "content": "smoke"}]}

    result = await chat(http, runtime.url, messages)
    assert result.status == 200
    assert result.names[0] == "meta" and result.terminal.name == "done"
    assert [record["model"] for record in runtime.records() if record.get("event") == "ai_run"] == [AWKWARD, FALLBACK], (
        "vars reach the Worker, and the binding, unchanged"
    )
    assert result.events[0].data["model"] == FALLBACK
    assert result.text

    raw = await http.post(runtime.url + "/api/chat/raw", json=messages)
    assert raw.status_code == 200
    assert raw.text.rstrip().endswith("data: [DONE]")
    frames = [json.loads(line[len("data: "):]) for line in raw.text.split("\n") if line.startswith("data: {")]
    assert "".join(frame["response"] for frame in frames) == result.text, "the same answer, re-framed and passed through"
    assert runtime.wait_for_record("chat_stream_completed", route="chat")
    assert not [r for r in runtime.records() if r["event"] == "chat_rate_limit_skipped"], "the limiter stand-in answers"

    # The benchmark reads CPU from this process: it must be the runtime's one workerd.
    [pid] = workerd_pids(runtime)
    assert b"serve" in (Path("/proc") / str(pid) / "cmdline").read_bytes()
    assert workerd_cpu_seconds(runtime) > 0
