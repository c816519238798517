"""Run the Worker's own config check on a wrangler file's [vars], before a deploy.

    python devtools/check_config.py [wrangler.toml]

Exits 1 naming the entry the Worker would refuse at run time (a retired or unlisted model,
a malformed number), so `make deploy-check` stops before bundling a Worker that would fail
every request. Secrets are not in the file and are not checked.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from chat.config import Config, ConfigError  # noqa: E402 - pure Python: the Worker's own check


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else ROOT / "wrangler.toml"
    variables = tomllib.loads(path.read_text(encoding="utf-8")).get("vars", {})
    try:
        config = Config.from_env(lambda name: None if variables.get(name) is None else str(variables[name]))
    except ConfigError as problem:
        print(f"{path.name}: {problem}", file=sys.stderr)
        return 1
    print(f"{path.name}: [vars] pass the Worker's config check (models: {', '.join(config.models)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
