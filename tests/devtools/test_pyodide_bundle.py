"""The development Pyodide bundle builder: deterministic, incremental, loud on drift."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from devtools import build_pyodide_bundle as builder


def test_patching_the_pinned_pyodide_routes_host_calls_through_workerd():
    source = (builder.PYODIDE_DIR / "pyodide.asm.mjs").read_text(encoding="utf-8")
    patched = builder.patch_asm(source)
    assert 'from "pyodide-internal:builtin_wrappers"' in patched
    assert "export { _createPyodideModule };" in patched
    assert "eval(func)" not in patched and "eval(UTF8ToString(ptr))" not in patched
    assert "new WebAssembly.Module" not in patched
    assert "Date.now" not in patched


def test_a_pattern_that_no_longer_matches_fails_loudly():
    with pytest.raises(builder.BundleBuildError, match="expected 1 match"):
        builder.patch_asm("function unrelated(){}")


def test_a_pyodide_version_other_than_the_pinned_one_is_refused(tmp_path: Path):
    (tmp_path / "package.json").write_text(json.dumps({"version": "314.0.7"}))
    with pytest.raises(builder.BundleBuildError, match="expects 314.0.6"):
        builder.check_pyodide_version(tmp_path)


def test_build_is_deterministic_and_skipped_when_inputs_are_unchanged(tmp_path: Path):
    first = builder.build(tmp_path / "a")
    second = builder.build(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    stamp = first.stat().st_mtime_ns
    assert builder.build(tmp_path / "a") == first
    assert first.stat().st_mtime_ns == stamp


def test_build_reruns_when_an_input_changes(tmp_path: Path):
    pyodide = tmp_path / "pyodide"
    shutil.copytree(builder.PYODIDE_DIR, pyodide, ignore=shutil.ignore_patterns("*.map", "*.d.ts", "*.html"))
    out = builder.build(tmp_path / "out", pyodide_dir=pyodide)
    before = out.read_bytes()
    with (pyodide / "python_stdlib.zip").open("ab") as stdlib:
        stdlib.write(b"\0")
    assert builder.build(tmp_path / "out", pyodide_dir=pyodide).read_bytes() != before
