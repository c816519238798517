"""The production configuration bundles for deploy offline, without development flags."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_production_config_uses_the_real_ai_binding_and_no_development_flags():
    config = tomllib.loads((ROOT / "wrangler.toml").read_text())
    assert config["ai"] == {"binding": "AI"}
    assert "python_workers" in config["compatibility_flags"]
    assert "python_workers_development" not in config["compatibility_flags"]
    assert "env" not in config or all("services" not in env for env in config["env"].values())


def test_production_config_limits_chat_requests_per_client():
    config = tomllib.loads((ROOT / "wrangler.toml").read_text())
    [limiter] = config["ratelimits"]
    assert limiter["name"] == "RATE_LIMITER" and limiter["namespace_id"].isdigit()
    assert limiter["simple"]["limit"] > 0 and limiter["simple"]["period"] in (10, 60)


def test_wrangler_deploy_dry_run_passes_offline(tmp_path: Path):
    env = dict(os.environ, WRANGLER_SEND_METRICS="false", PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        ["node", str(ROOT / "node_modules" / "wrangler" / "bin" / "wrangler.js"), "deploy", "--dry-run", "--outdir", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--dry-run: exiting now." in result.stdout
    assert "env.AI" in result.stdout
    [limiter] = tomllib.loads((ROOT / "wrangler.toml").read_text())["ratelimits"]
    simple = limiter["simple"]
    assert f"env.RATE_LIMITER ({simple['limit']} requests/{simple['period']}s)" in result.stdout, "the binding survives bundling"
    assert (tmp_path / "entry.py").is_file()
    assert (tmp_path / "chat" / "stream" / "relay.mjs").is_file(), "the relay's JS half is bundled"


def test_the_config_check_before_a_deploy_refuses_a_retired_model(tmp_path: Path):
    from devtools.check_config import main

    assert main([str(ROOT / "wrangler.toml")]) == 0
    retired = tmp_path / "wrangler.toml"
    text = (ROOT / "wrangler.toml").read_text().replace('MODEL = "@cf/zai-org/glm-4.7-flash"', 'MODEL = "@cf/meta/llama-3.1-8b-instruct"')
    assert "llama-3.1-8b-instruct" in text
    retired.write_text(text)
    assert main([str(retired)]) == 1


def test_the_deploy_check_names_the_open_surfaces_and_deploy_refuses_an_open_v1_unless_asked(tmp_path: Path):
    check = [str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "devtools" / "check_config.py")]
    closed = subprocess.run([*check, "--deploy", str(ROOT / "wrangler.toml")], capture_output=True, text=True, timeout=60)
    assert closed.returncode == 0 and "/v1/chat/completions, /v1/responses (and stored responses, conversations): closed, 401" in closed.stdout
    assert "cannot read secrets" in closed.stdout
    opened = tmp_path / "wrangler.toml"
    opened.write_text((ROOT / "wrangler.toml").read_text().replace('OPENAI_API_PUBLIC = "false"', 'OPENAI_API_PUBLIC = "true"'))
    plain = subprocess.run([*check, str(opened)], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and "OPEN to anyone" in plain.stdout  # deploy-check says so, and passes
    environment = {key: value for key, value in os.environ.items() if key != "CONFIRM_PUBLIC_V1"}
    refused = subprocess.run([*check, "--deploy", str(opened)], capture_output=True, text=True, timeout=60, env=environment)
    assert refused.returncode == 1 and "CONFIRM_PUBLIC_V1=yes" in refused.stderr
    asked = subprocess.run([*check, "--deploy", str(opened)], capture_output=True, text=True, timeout=60,
                           env={**environment, "CONFIRM_PUBLIC_V1": "yes"})
    assert asked.returncode == 0
