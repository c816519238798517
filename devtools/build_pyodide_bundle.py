"""Build the Pyodide development bundle that lets real workerd run Python Workers offline.

workerd normally downloads a Pyodide bundle whose SHA-256 is compiled into the binary.
With the compatibility flag `python_workers_development` it instead loads
`pyodide_dev.capnp.bin` from `--pyodide-bundle-disk-cache-dir`, unchecked. This script
builds that file from the npm package `pyodide` (pinned in package.json), patching
`pyodide.asm.mjs` so Emscripten's host calls go through workerd's wrappers.

Every substitution has an expected match count measured on the pinned versions: a
Pyodide or workerd upgrade shows up here as a loud failure, never as a runtime that
half-starts. The output is deterministic and rebuilt only when an input changes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYODIDE_DIR = ROOT / "node_modules" / "pyodide"
SCHEMA = Path(__file__).resolve().parent / "pyodide_bundle.capnp"
DEFAULT_OUT_DIR = ROOT / ".dev" / "pyodide-bundle"
BUNDLE_NAME = "pyodide_dev.capnp.bin"

# workerd 1.20261117.1 (wrangler 4.164.0) with compatibility_date 2026-11-01 checks
# for exactly this Pyodide ("Pyodide version mismatch, expected '314.0.6'").
EXPECTED_PYODIDE_VERSION = "314.0.6"

MODULE_PREFIX = "pyodideRuntime-internal:"
WRAPPER_NAMES = (
    "addEventListener",
    "getRandomValues",
    "location",
    "monotonicDateNow",
    "newWasmModule",
    "patchedApplyFunc",
    "patchedLoadLibData",
    "wasmInstantiate",
    "patched_PyEM_CountFuncParams",
)
EVAL_REFUSED = '(()=>{throw new Error("Emscripten tried to eval; workerd forbids it")})()'


class BundleBuildError(RuntimeError):
    """The inputs are not what this builder was written for."""


@dataclass(frozen=True, kw_only=True)
class Substitution:
    why: str
    pattern: str  # a regular expression
    replacement: str
    count: int  # exact number of matches expected in the pinned pyodide.asm.mjs


SUBSTITUTIONS: tuple[Substitution, ...] = (
    Substitution(
        why="import workerd's host-call wrappers and export the factory by name",
        pattern=r"export default _createPyodideModule;",
        replacement=(
            "import { " + ", ".join(WRAPPER_NAMES) + ' } from "pyodide-internal:builtin_wrappers";\n'
            "export { _createPyodideModule };\n"
            "export default _createPyodideModule;"
        ),
        count=1,
    ),
    Substitution(
        why="workerd compiles Wasm only through its checked wrapper",
        pattern=r"new WebAssembly\.Module\b",
        replacement="newWasmModule",
        count=4,
    ),
    Substitution(
        why="instantiation goes through workerd's wrapper too (instantiateStreaming is left alone)",
        pattern=r"WebAssembly\.instantiate\b(?!Streaming)",
        replacement="wasmInstantiate",
        count=2,
    ),
    Substitution(
        why="timers are frozen in workerd; Python's directory mtimes need a clock that moves",
        pattern=r"Date\.now\b",
        replacement="monotonicDateNow",
        count=22,
    ),
    Substitution(
        why="randomness comes from workerd's wrapper, which knows the request context",
        pattern=r"crypto\.getRandomValues\(",
        replacement="getRandomValues(Module, ",
        count=1,
    ),
    Substitution(
        why="eval is disallowed in workerd: fail with a clear error instead",
        pattern=r"eval\((?:func|data|UTF8ToString\(ptr\))\)",
        replacement=EVAL_REFUSED,
        count=6,
    ),
    Substitution(
        why="shared libraries are loaded from workerd's package store",
        pattern=r"function loadLibData\(\)\{",
        replacement=(
            "function loadLibData(){return flags.loadAsync"
            "?Promise.resolve(patchedLoadLibData(Module,libName,flags.rpath))"
            ":patchedLoadLibData(Module,libName,flags.rpath)}"
            "function unpatchedLoadLibData(){"
        ),
        count=1,
    ),
    Substitution(
        why="shared-library memory is allocated by workerd's snapshot-aware allocator",
        pattern=r"\bgetMemory\(",
        replacement="Module.getMemoryPatched(Module, libName, ",
        count=1,
    ),
    Substitution(
        why="let workerd observe fatal errors even on the recursive path",
        pattern=(
            r'console\.error\("Recursive call to fatal_error\. Inner error was:"\)'
            r"(?P<sep>[,;])console\.error\((?P<err>\w+)\)"
        ),
        replacement=(
            r'console.error("Recursive call to fatal_error. Inner error was:")\g<sep>'
            r"(()=>{try{API.on_fatal?.(\g<err>)}catch(_){}})()\g<sep>console.error(\g<err>)"
        ),
        count=1,
    ),
)


def patch_asm(source: str) -> str:
    for sub in SUBSTITUTIONS:
        source, found = re.subn(sub.pattern, sub.replacement, source)
        if found != sub.count:
            raise BundleBuildError(
                f"pyodide.asm.mjs: expected {sub.count} match(es) of {sub.pattern!r} "
                f"({sub.why}), found {found}. The pinned pyodide or workerd changed: "
                "re-check the patch list against the new versions."
            )
    return source


def check_pyodide_version(pyodide_dir: Path) -> None:
    package = pyodide_dir / "package.json"
    if not package.is_file():
        raise BundleBuildError(f"{package} is missing: run `npm ci` first (make setup does)")
    version = json.loads(package.read_text())["version"]
    if version != EXPECTED_PYODIDE_VERSION:
        raise BundleBuildError(
            f"npm package pyodide is {version}, but the pinned workerd expects "
            f"{EXPECTED_PYODIDE_VERSION}: pin it exactly in package.json"
        )


def encode_bundle(asm_source: bytes, wasm: bytes, stdlib: bytes) -> bytes:
    import capnp  # type: ignore[import-untyped]  # dev dependency, imported late for a clear error above

    capnp.remove_import_hook()
    schema = capnp.load(str(SCHEMA))
    bundle = schema.Bundle.new_message()
    modules = bundle.init("modules", 3)
    entries = (("pyodide.asm", "src", asm_source), ("pyodide.asm.wasm", "wasm", wasm), ("python_stdlib.zip", "data", stdlib))
    for module, (name, kind, payload) in zip(modules, entries, strict=False):
        module.name = MODULE_PREFIX + name
        setattr(module, kind, payload)
        module.type = "internal"
    return bytes(bundle.to_bytes())


def inputs_digest(pyodide_dir: Path) -> str:
    digest = hashlib.sha256()
    for path in (Path(__file__).resolve(), SCHEMA, *(pyodide_dir / n for n in ("package.json", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip"))):
        digest.update(path.name.encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def build(out_dir: Path, pyodide_dir: Path = PYODIDE_DIR, force: bool = False) -> Path:
    """Write `out_dir/pyodide_dev.capnp.bin` unless it is already built from the same inputs."""
    check_pyodide_version(pyodide_dir)
    out = out_dir / BUNDLE_NAME
    stamp = out_dir / (BUNDLE_NAME + ".inputs")
    digest = inputs_digest(pyodide_dir)
    if not force and out.is_file() and stamp.is_file() and stamp.read_text() == digest:
        return out
    asm = patch_asm((pyodide_dir / "pyodide.asm.mjs").read_text(encoding="utf-8"))
    encoded = encode_bundle(
        asm.encode("utf-8"),
        (pyodide_dir / "pyodide.asm.wasm").read_bytes(),
        (pyodide_dir / "python_stdlib.zip").read_bytes(),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial")
    partial.write_bytes(encoded)
    partial.replace(out)
    stamp.write_text(digest)
    print(f"built {out} ({len(encoded):,} bytes, sha256 {hashlib.sha256(encoded).hexdigest()[:16]})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=DEFAULT_OUT_DIR)
    parser.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    args = parser.parse_args(argv)
    try:
        build(args.out_dir, force=args.force)
    except BundleBuildError as exc:
        print(f"build_pyodide_bundle: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
