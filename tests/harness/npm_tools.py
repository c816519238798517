"""Heavy command-line clients from the npm registry (Codex CLI, Claude Code), installed
once, pinned, into a folder of .dev/ by the tests that run them, never by `make dev`."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ensure_installed(prefix: Path, package: str, version: str, *, what: str, timeout: float = 600) -> None:
    """`package@version` installed into `prefix` once: under a file lock, so that parallel
    pytest workers install it once; a failure says the command that installs it by hand."""
    command = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", f"{package}@{version}"]
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed_version(prefix, package) == version:
            return
        # npm with the machine's own settings (its registry, its CA certificates: a bare
        # environment failed here with SELF_SIGNED_CERT_IN_CHAIN), and the project's Node.
        path = os.pathsep.join([str(ROOT / ".venv" / "bin"), os.environ.get("PATH", "/usr/bin:/bin")])
        done = subprocess.run(command, env={**os.environ, "PATH": path}, timeout=timeout, capture_output=True, text=True)
        if done.returncode != 0 or installed_version(prefix, package) != version:
            raise RuntimeError(f"{what} {version} could not be installed (npm said: {done.stderr[-500:]!r}). "
                               f"Install it by hand with: {' '.join(command)}")


def installed_version(prefix: Path, package: str) -> str | None:
    try:
        version = json.loads((prefix / "node_modules" / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return version if isinstance(version, str) else None
