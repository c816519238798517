"""Rules of the runtime that no linter sees, checked over the Worker's source on CPython."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

# Both block on a JS promise by switching stacks (JSPI), which fails when Python was
# entered from a JS callback such as a timer ("Cannot stack switch…", docs/platform.md);
# an awaited import (chat.platform.ffi.import_js_module) works from anywhere.
BLOCKING = {"run_sync", "import_from_javascript"}


def blocking_uses(source: str) -> list[int]:
    """The lines of `source` that name one of BLOCKING: imported, called or looked up."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and any(alias.name in BLOCKING for alias in node.names):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Attribute) and node.attr in BLOCKING) or (isinstance(node, ast.Name) and node.id in BLOCKING):
            lines.append(node.lineno)
    return lines


def test_the_rule_sees_every_way_of_naming_them():
    assert blocking_uses("from pyodide.ffi import run_sync") == [1]
    assert blocking_uses("import workers\nworkers.import_from_javascript('x')") == [2]
    assert blocking_uses("f = run_sync") == [1]
    assert blocking_uses("# run_sync is not used\nx = 'import_from_javascript'") == [], "comments and strings are not uses"


def test_no_module_of_the_worker_blocks_on_a_js_promise():
    offenders = {
        str(path.relative_to(SRC)): lines
        for path in sorted(SRC.rglob("*.py"))
        if (lines := blocking_uses(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}
