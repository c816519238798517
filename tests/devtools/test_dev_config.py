"""The launcher's local configuration, derived from wrangler.toml (devtools/dev.py)."""

from __future__ import annotations

import copy
import tomllib

import pytest

from devtools.dev import AI_QUIRKS, ROOT, emulator_config, local_worker_config, parse_args

PRODUCTION = tomllib.loads((ROOT / "wrangler.toml").read_text())


def test_without_rate_limit_the_wrangler_toml_limiter_is_used_as_it_is():
    assert local_worker_config(PRODUCTION)["ratelimits"] == PRODUCTION["ratelimits"]


def test_rate_limit_replaces_only_the_limit_and_leaves_the_production_config_alone():
    before = copy.deepcopy(PRODUCTION)
    [limiter] = local_worker_config(PRODUCTION, rate_limit=5)["ratelimits"]
    [production] = PRODUCTION["ratelimits"]
    assert limiter == {**production, "simple": {**production["simple"], "limit": 5}}
    assert PRODUCTION == before


def test_rate_limit_zero_leaves_the_worker_without_a_limiter_binding():
    assert "ratelimits" not in local_worker_config(PRODUCTION, rate_limit=0)


def test_rate_limit_without_a_limiter_in_wrangler_toml_is_refused():
    production = {key: value for key, value in PRODUCTION.items() if key != "ratelimits"}
    with pytest.raises(SystemExit, match="no \\[\\[ratelimits\\]\\]"):
        local_worker_config(production, rate_limit=5)


def test_the_launcher_takes_a_rate_limit_of_zero_or_more():
    assert parse_args([]).rate_limit is None
    assert parse_args(["--rate-limit", "5"]).rate_limit == 5
    with pytest.raises(SystemExit):
        parse_args(["--rate-limit", "-1"])


def test_another_main_module_is_served_without_the_workers_durable_objects():
    own = local_worker_config(PRODUCTION)
    assert own["durable_objects"] == PRODUCTION["durable_objects"] and own["migrations"] == PRODUCTION["migrations"]
    anchor = local_worker_config(PRODUCTION, "bench/js_reframer/worker.js")
    assert "durable_objects" not in anchor and "migrations" not in anchor
    assert anchor["main"].endswith("bench/js_reframer/worker.js")


def test_ai_quirks_reach_the_emulator_as_one_comma_separated_setting():
    args = parse_args(["--ai-quirks", "numbers, error_midway,numbers"])
    assert args.ai_quirks == ("numbers", "error_midway")
    assert emulator_config(args, PRODUCTION["compatibility_date"])["vars"]["AI_QUIRKS"] == "numbers,error_midway"
    assert "AI_QUIRKS" not in emulator_config(parse_args([]), PRODUCTION["compatibility_date"])["vars"]
    assert parse_args(["--ai-quirks", ",".join(AI_QUIRKS)]).ai_quirks == AI_QUIRKS


def test_an_unknown_ai_quirk_stops_the_launcher_at_start_up_naming_it_and_the_known_ones(capsys):
    with pytest.raises(SystemExit) as stopped:
        parse_args(["--ai-quirks", "numbers,nope"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert "--ai-quirks: unknown quirk 'nope'; known: numbers, error_midway, finish_alias" in error


def test_the_launchers_open_v1_unless_told_otherwise():
    # wrangler.toml deploys /v1's chat routes closed without AUTH_TOKEN; local work stays open.
    assert "OPENAI_API_PUBLIC:true" in parse_args([]).var
    assert [item for item in parse_args(["--var", "OPENAI_API_PUBLIC:false"]).var if item.startswith("OPENAI_API_PUBLIC")] == \
        ["OPENAI_API_PUBLIC:false"]
    assert tomllib.loads((ROOT / "wrangler.toml").read_text())["vars"]["OPENAI_API_PUBLIC"] == "false"


@pytest.mark.parametrize("key", [" OPENAI_API_PUBLIC", "OPENAI_API_PUBLIC ", "openai_api_public"])
def test_a_misspelt_public_var_is_refused_rather_than_leaving_v1_open(key, capsys):
    with pytest.raises(SystemExit):
        parse_args(["--var", f"{key}:false"])
    assert "spelled exactly" in capsys.readouterr().err
