"""Run the Worker's own config check on a wrangler file's [vars], before a deploy, and say
which surfaces the configuration leaves open to the internet.

    python devtools/check_config.py [--deploy] [wrangler.toml]

Exits 1 naming the entry the Worker would refuse at run time (a retired or unlisted model,
a malformed number), so `make deploy-check` stops before bundling a Worker that would fail
every request. With --deploy (`make deploy`) it also refuses a `/v1` left open to anyone
(OPENAI_API_PUBLIC = "true") unless CONFIRM_PUBLIC_V1=yes is in the environment. Secrets are
not in the file: whether AUTH_TOKEN is set is for `npx wrangler secret list` to say.
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from chat.config import Config, ConfigError  # noqa: E402 - pure Python: the Worker's own check

CONFIRM = "CONFIRM_PUBLIC_V1"


def surfaces(config: Config) -> list[str]:
    """What the configuration leaves open, a line each."""
    v1 = ("OPEN to anyone (OPENAI_API_PUBLIC is \"true\")" if config.openai_api_public
          else "closed, 401 (OPENAI_API_PUBLIC is \"false\")")
    return [
        "Without the AUTH_TOKEN secret (this check cannot read secrets: `npx wrangler secret list` shows whether it is set):",
        "  /, /api/chat, /api/chat/raw, /api/ui-chat and their streams: open to anyone, within the rate limit",
        f"  /v1/chat/completions, /v1/responses (and stored responses, conversations): {v1}",
        "  /v1/models, /health: open (model names and a status only)",
        "With AUTH_TOKEN set, every route needs it but the page's files, CORS preflights and /health.",
    ]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    deploy = "--deploy" in args
    files = [arg for arg in args if arg != "--deploy"]
    path = Path(files[0]) if files else ROOT / "wrangler.toml"
    variables = tomllib.loads(path.read_text(encoding="utf-8")).get("vars", {})
    try:
        config = Config.from_env(lambda name: None if variables.get(name) is None else str(variables[name]))
    except ConfigError as problem:
        print(f"{path.name}: {problem}", file=sys.stderr)
        return 1
    print(f"{path.name}: [vars] pass the Worker's config check (models: {', '.join(config.models)})")
    print("\n".join(surfaces(config)))
    if deploy and config.openai_api_public and os.environ.get(CONFIRM) != "yes":
        print(f'{path.name}: refusing to deploy /v1 open to anyone: OPENAI_API_PUBLIC is "true". If you mean it, run '
              f'`make deploy {CONFIRM}=yes`; else set it to "false" (AUTH_TOKEN then guards /v1).', file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
