"""Run the chat Worker in workerd itself, without wrangler: the production-like runtime.

    python devtools/workerd_direct.py [--port N] [--var KEY:VALUE ...] [--ai-script FILE]
                                      [--ai-format native|openai] [--ai-pace TOKENS_PER_S]
                                      [--ai-reply-tokens N] [--ai-frames-per-chunk N]
                                      [--ai-stamp-tokens] [--main FILE] [--rate-limit N]
                                      [--print-config]

`make dev` (devtools/dev.py) runs the Worker under `wrangler dev`: a Node proxy in front of
workerd, miniflare's entry and asset-router Workers, an inspector. Each adds CPU to every
request, so CPU measured there is not what a deployed Worker is billed for. This launcher
writes a workerd configuration (Cap'n Proto text) from wrangler.toml and starts workerd on
it directly: one HTTP socket straight to the Worker, no proxy, no inspector.

What it serves, from wrangler.toml and the same options as dev.py:
- the Worker: every .py file under the main module's folder as a Python module, the main
  module first; wrangler.toml's compatibility date and flags plus the development flags
  (`python_workers_development` loads the Pyodide bundle that `make setup` built);
  `--main FILE.js` serves that ES module instead (the JS benchmark anchor), with the same
  bindings;
- [vars] as text bindings (`--var KEY:VALUE` overrides or adds one: secrets such as
  AUTH_TOKEN too);
- AI: a service binding to the Workers AI emulator (the ES modules of ai_emulator/, its
  entry emulator.js first), set up by the `--ai-*` options exactly as dev.py sets it up;
- RATE_LIMITER: a stand-in (devtools/rate_limiter/) counting wrangler.toml's `simple` limit
  per key (`--rate-limit N` replaces the limit; 0 leaves the binding out, as a deploy
  without one). Like the real binding it is a wrapped binding that calls a separate service,
  so the Worker pays one RPC per chat request, as it pays one call to the real binding.
Static assets are not served: they never reach the Worker in production.

Prints workerd's output (the Worker's and the emulator's log lines) as it comes, and
"Ready on http://IP:PORT" once /health has answered 200 (the first request initialises
Python); `--port 0` takes a free port, named in that line. Ctrl-C (or SIGTERM) stops workerd. `--print-config` prints the configuration and
exits.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: make `devtools` importable
    sys.path.insert(0, str(ROOT))

from devtools.dev import (  # noqa: E402
    BUNDLE,
    DEV_FLAGS,
    EMULATOR_MAIN,
    EMULATOR_NAME,
    argument_parser,
    emulator_config,
    parse_args,
    stop_when_orphaned,
)

WORKERD = Path(os.environ.get("WORKERD_REAL_PATH", ROOT / "node_modules" / "@cloudflare" / "workerd-linux-64" / "bin" / "workerd"))
BUNDLE_DIR = Path(os.environ.get("PYODIDE_BUNDLE_DIR", BUNDLE.parent))
RATE_LIMITER_NAME = "rate-limiter"
LOOPBACK_NAME = "loopback"  # the emulator's outbound when it fetches its script (--ai-script-url)
DO_STORAGE_NAME = "durable-object-storage"
RATE_LIMITER_DIR = ROOT / "devtools" / "rate_limiter"
RATE_LIMITER_MODULE = "rate-limiter:binding"  # an internal extension module: wrapped bindings need one
READY_TIMEOUT_S = 120.0

# wrangler.toml keys that declare bindings this launcher has no stand-in for: a Worker that
# needs one must not start as if it were complete.
UNSUPPORTED_BINDINGS = (
    "kv_namespaces", "d1_databases", "r2_buckets", "services", "queues",
    "hyperdrive", "vectorize", "analytics_engine_datasets", "browser", "send_email",
    "workflows", "dispatch_namespaces", "mtls_certificates", "secrets_store_secrets",
    "images", "pipelines", "version_metadata", "unsafe",
)


def capnp_string(text: str) -> str:
    """`text` as a Cap'n Proto string literal (C-style escapes; other characters as UTF-8)."""
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\{ord(char):03o}")  # octal: always exactly three digits
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def worker_modules(main: Path) -> list[tuple[str, str, str]]:
    """(name, kind, source) of a Worker's modules, its main module first.

    A Python main module brings every .py file (and .mjs, as ES modules) under its folder,
    named by its path from there, as wrangler bundles them; a JS main module is served alone.
    """
    if main.suffix == ".py":
        folder = main.parent
        others = sorted(p for p in folder.rglob("*.py") if p != main and "__pycache__" not in p.parts)
        scripts = sorted(folder.rglob("*.mjs"))  # the ES modules Python imports (wrangler.toml's rule)
        return [(p.relative_to(folder).as_posix(), "pythonModule", p.read_text(encoding="utf-8")) for p in [main, *others]] + [
            (p.relative_to(folder).as_posix(), "esModule", p.read_text(encoding="utf-8")) for p in scripts
        ]
    return [module(main)]


def emulator_modules(main: Path = EMULATOR_MAIN) -> list[tuple[str, str, str]]:
    """(name, kind, source) of the emulator's ES modules, its entry first: every .js file
    under its folder, named by its path from there, which is what its relative imports
    (`./tools.js`) resolve to; wrangler bundles the same modules from the entry."""
    folder = main.parent
    others = sorted(p for p in folder.rglob("*.js") if p != main)
    return [(p.relative_to(folder).as_posix(), "esModule", p.read_text(encoding="utf-8")) for p in [main, *others]]


def module(path: Path) -> tuple[str, str, str]:
    return (path.name, "esModule", path.read_text(encoding="utf-8"))


def variable_bindings(production: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """[vars] with `--var KEY:VALUE` overrides applied, as wrangler applies them."""
    variables = dict(production.get("vars", {}))
    for item in overrides:
        key, _, value = item.partition(":")
        variables[key] = value
    return variables


def binding(name: str, value: Any) -> str:
    # wrangler gives string vars as text and any other TOML value as parsed JSON.
    if isinstance(value, str):
        return f"(name = {capnp_string(name)}, text = {capnp_string(value)})"
    return f"(name = {capnp_string(name)}, json = {capnp_string(json.dumps(value))})"


def service_binding(name: str, service: str) -> str:
    # No entrypoint: the service's default export (the emulator's WorkerEntrypoint class).
    return f"(name = {capnp_string(name)}, service = {capnp_string(service)})"


def worker(modules: list[tuple[str, str, str]], date: str, flags: list[str], bindings: list[str], extra: str = "") -> str:
    module_list = ",\n".join(f"      (name = {capnp_string(name)}, {kind} = {capnp_string(source)})" for name, kind, source in modules)
    return (
        "(\n"
        f"    modules = [\n{module_list}\n    ],\n"
        f"    compatibilityDate = {capnp_string(date)},\n"
        f"    compatibilityFlags = [{', '.join(capnp_string(flag) for flag in flags)}],\n"
        f"    bindings = [{', '.join(bindings)}],\n"
        f"{extra}"
        "  )"
    )


def durable_objects(production: dict[str, Any]) -> tuple[list[str], str]:
    """The Worker's Durable Object bindings and the worker fields declaring their classes
    (SQLite-backed when a migration says so), stored on DO_STORAGE_NAME's disk."""
    declared = production.get("durable_objects", {}).get("bindings", [])
    if not declared:
        return [], ""
    if any("script_name" in entry for entry in declared):
        raise SystemExit("wrangler.toml binds a Durable Object of another Worker; this launcher serves its own only")
    sqlite = {name for migration in production.get("migrations", []) for name in migration.get("new_sqlite_classes", [])}
    bindings = [f"(name = {capnp_string(entry['name'])}, durableObjectNamespace = (className = {capnp_string(entry['class_name'])}))"
                for entry in declared]
    namespaces = ", ".join(
        f"(className = {capnp_string(name)}, uniqueKey = {capnp_string(production['name'] + '-' + name)}"
        f"{', enableSql = true' if name in sqlite else ''})"
        for name in sorted({entry["class_name"] for entry in declared})
    )
    extra = f"    durableObjectNamespaces = [{namespaces}],\n    durableObjectStorage = (localDisk = {capnp_string(DO_STORAGE_NAME)}),\n"
    return bindings, extra


def rate_limit_settings(production: dict[str, Any], rate_limit: int | None) -> tuple[str, int, int] | None:
    """(binding name, limit, period) of the limiter to serve, or None for no binding."""
    limiters = production.get("ratelimits", [])
    if rate_limit is not None and not limiters:
        raise SystemExit("--rate-limit: wrangler.toml has no [[ratelimits]] binding")
    if len(limiters) > 1:
        raise SystemExit("wrangler.toml has several [[ratelimits]] bindings; this launcher serves one")
    if not limiters or rate_limit == 0:
        return None
    [limiter] = limiters
    simple = limiter["simple"]
    return limiter["name"], simple["limit"] if rate_limit is None else rate_limit, simple["period"]


def workerd_config(production: dict[str, Any], args: argparse.Namespace, storage: Path = ROOT / ".dev" / "direct-state") -> str:
    """The workerd configuration (Cap'n Proto text) for wrangler.toml and the launcher's
    options; Durable Objects keep their state in the directory `storage`.

    Raises SystemExit when wrangler.toml declares a binding this launcher cannot serve.
    """
    unsupported = [key for key in UNSUPPORTED_BINDINGS if key in production]
    if unsupported:
        raise SystemExit(f"wrangler.toml declares bindings the production-like launcher cannot serve: {', '.join(unsupported)}")
    date = production["compatibility_date"]
    flags = list(production.get("compatibility_flags", []))
    flags += [flag for flag in DEV_FLAGS if flag not in flags]
    main = ROOT / (args.main or production["main"])
    limiter = rate_limit_settings(production, args.rate_limit)
    bindings = [binding(key, value) for key, value in variable_bindings(production, args.var).items()]
    bindings.append(service_binding(production.get("ai", {}).get("binding", "AI"), EMULATOR_NAME))
    if limiter is not None:
        # Wrapped, as the real binding is: the Worker sees a plain object, which calls the
        # counting service over RPC once per limit().
        inner = service_binding("counter", RATE_LIMITER_NAME)
        bindings.append(f"(name = {capnp_string(limiter[0])}, wrapped = (moduleName = {capnp_string(RATE_LIMITER_MODULE)}, innerBindings = [{inner}]))")
    object_bindings, object_fields = durable_objects(production)
    bindings += object_bindings
    emulator_vars = emulator_config(args, date)["vars"]  # the emulator's settings, as dev.py gives them
    # workerd's default outbound reaches public addresses only; the script address is local.
    script_outbound = f"    globalOutbound = {capnp_string(LOOPBACK_NAME)},\n" if "AI_SCRIPT_URL" in emulator_vars else ""
    services = [
        ("main", worker(worker_modules(main), date, flags, bindings, object_fields)),
        (EMULATOR_NAME, worker(emulator_modules(), date, [],
                               [binding(key, value) for key, value in emulator_vars.items()], script_outbound)),
    ]
    extensions = ""
    if limiter is not None:
        _, limit, period = limiter
        services.append((RATE_LIMITER_NAME, worker([module(RATE_LIMITER_DIR / "counter.js")], date, [],
                                                   [binding("LIMIT", str(limit)), binding("PERIOD", str(period))])))
        source = (RATE_LIMITER_DIR / "binding.js").read_text(encoding="utf-8")
        extensions = f" extensions = [(modules = [(name = {capnp_string(RATE_LIMITER_MODULE)}, internal = true, esModule = {capnp_string(source)})])],\n"
    service_list = ",\n".join(f"  (name = {capnp_string(name)}, worker = {body})" for name, body in services)
    if script_outbound:
        service_list += f',\n  (name = {capnp_string(LOOPBACK_NAME)}, network = (allow = ["local"]))'
    if object_fields:
        service_list += f",\n  (name = {capnp_string(DO_STORAGE_NAME)}, disk = (path = {capnp_string(str(storage))}, writable = true))"
    flags_given = getattr(args, "v8_flag", [])
    v8_flags = f" v8Flags = [{', '.join(capnp_string(flag) for flag in flags_given)}],\n" if flags_given else ""
    address = f"{args.ip}:{args.port}"
    return (
        "# Generated by devtools/workerd_direct.py from wrangler.toml: do not edit.\n"
        'using Workerd = import "/workerd/workerd.capnp";\n\n'
        "const config :Workerd.Config = (\n"
        f" services = [\n{service_list}\n ],\n"
        f' sockets = [(name = "http", address = {capnp_string(address)}, http = (), service = "main")],\n'
        f"{extensions}"
        f"{v8_flags}"
        ");\n"
    )


def listening_port(workerd: subprocess.Popen[bytes], control: int, deadline: float) -> int | None:
    """The port workerd's "http" socket listens on, from its control messages (one JSON
    object a line); None if workerd gives up (a port in use) or the time runs out."""
    pending = b""
    while (remaining := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([control], [], [], min(remaining, 1.0))
        if not readable:
            if workerd.poll() is not None:
                return None
            continue
        chunk = os.read(control, 4096)
        if not chunk:
            return None  # workerd closed it: it will not listen
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if message.get("event") == "listen" and message.get("socket") == "http":
                return int(message["port"])
    return None


def wait_until_serving(workerd: subprocess.Popen[bytes], url: str, deadline: float) -> bool:
    """True once GET /health answers 200 (the first request initialises Python); False if
    workerd exits or the time runs out."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    while time.monotonic() < deadline and workerd.poll() is None:
        try:
            with opener.open(url + "/health", timeout=30) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    return False


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def launcher_args(argv: list[str] | None) -> argparse.Namespace:
    """dev.py's options, and --print-config."""
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--print-config", action="store_true", help="print the workerd configuration and exit")
    parser.add_argument("--v8-flag", action="append", default=[], metavar="FLAG",
                        help="a V8 flag for every isolate, e.g. --v8-flag=--max-old-space-size=128 (repeatable)")
    return parse_args(argv, parser)


def main(argv: list[str] | None = None) -> int:
    args = launcher_args(argv)
    production = tomllib.loads((ROOT / "wrangler.toml").read_text(encoding="utf-8"))
    if args.print_config:
        sys.stdout.write(workerd_config(production, args))
        return 0
    if not (BUNDLE_DIR / BUNDLE.name).is_file() or not WORKERD.is_file():
        print("workerd_direct: the local runtime is not set up; run `make setup` first", file=sys.stderr)
        return 1
    (ROOT / ".dev").mkdir(exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="direct-", dir=ROOT / ".dev"))
    storage = Path(args.persist_to) if args.persist_to else run_dir / "state"
    storage.mkdir(parents=True, exist_ok=True)
    config = workerd_config(production, args, storage.resolve())
    config_file = run_dir / "workerd.capnp"
    config_file.write_text(config, encoding="utf-8")
    # --experimental: the development flag is experimental. --control-fd: workerd reports the
    # port it listens on, so a port taken by another server is an error, not its /health.
    # Its output goes straight to ours.
    control, control_end = os.pipe()
    command = [str(WORKERD), "serve", str(config_file), "--experimental",
               f"--pyodide-bundle-disk-cache-dir={BUNDLE_DIR}", f"--control-fd={control_end}"]
    workerd = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, pass_fds=[control_end])
    os.close(control_end)

    def interrupted(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    stop_when_orphaned()
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        port = listening_port(workerd, control, deadline)
        if port is None:
            print(f"workerd_direct: workerd did not listen on {args.ip}:{args.port}", file=sys.stderr, flush=True)
            return 1
        url = f"http://{args.ip}:{port}"
        if not wait_until_serving(workerd, url, deadline):
            print(f"workerd_direct: {url}/health did not answer 200 (workerd exit code {workerd.poll()})", file=sys.stderr, flush=True)
            return 1
        print(f"Ready on {url}", flush=True)
        return workerd.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        stop(workerd)
        os.close(control)
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
