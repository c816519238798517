"""The model catalog and what the configuration check makes of it (pure Python)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from chat.config import Config, ConfigError, check_models
from chat.model import catalog

ROOT = Path(__file__).resolve().parents[2]


def production_vars() -> dict[str, str]:
    return tomllib.loads((ROOT / "wrangler.toml").read_text(encoding="utf-8"))["vars"]


def test_wrangler_toml_names_only_current_models():
    config = Config.from_env(production_vars().get)
    for model_id in config.models:
        assert isinstance(catalog.lookup(model_id), catalog.Model), model_id
    assert config.fallback_models, "a second model for when the first is out of capacity"


@pytest.mark.parametrize("retired", catalog.RETIRED, ids=lambda entry: entry.id)
def test_a_retired_model_is_refused_as_model_or_fallback(retired):
    with pytest.raises(ConfigError, match="retired by Workers AI on 2026-05-30"):
        Config.from_env({**production_vars(), "MODEL": retired.id}.get)
    with pytest.raises(ConfigError, match="FALLBACK_MODELS"):
        Config.from_env({**production_vars(), "FALLBACK_MODELS": f"@cf/google/gemma-4-26b-a4b-it, {retired.id}"}.get)
    with pytest.raises(ConfigError, match="retired"):
        check_models((retired.id,), allow_unlisted=True), "allowing unlisted ids never allows retired ones"


def test_an_alias_of_a_retired_model_names_what_answers_it_now():
    with pytest.raises(ConfigError, match="kimi-k2.6"):
        check_models(("@cf/moonshotai/kimi-k2.5",), allow_unlisted=False)


def test_an_unlisted_model_needs_the_explicit_setting():
    with pytest.raises(ConfigError, match="ALLOW_UNLISTED_MODELS"):
        Config.from_env({**production_vars(), "MODEL": "@cf/new/model-of-next-week"}.get)
    config = Config.from_env({**production_vars(), "MODEL": "@cf/new/model-of-next-week", "ALLOW_UNLISTED_MODELS": "true"}.get)
    assert config.model == "@cf/new/model-of-next-week"
    with pytest.raises(ConfigError, match="ALLOW_UNLISTED_MODELS"):
        Config.from_env({**production_vars(), "ALLOW_UNLISTED_MODELS": "sometimes"}.get)


def test_every_entry_is_complete_and_no_model_is_both_current_and_retired():
    current = {model.id for model in catalog.MODELS}
    assert len(current) == len(catalog.MODELS) and len(catalog.RETIRED) == 18
    assert not current & {entry.id for entry in catalog.RETIRED}
    for model in catalog.MODELS:
        assert model.id.startswith("@cf/") and model.framing in ("native", "openai")
        assert model.context_window is None or model.context_window >= 8_000
        assert set(model.ranges) == {"temperature", "top_p", "frequency_penalty", "presence_penalty"}
        if model.reasoning is not None and model.reasoning.field is not None:
            assert model.reasoning.field in ("reasoning_content", "reasoning")
    for entry in catalog.RETIRED:
        assert entry.aliased_to is None or entry.aliased_to in current


@pytest.mark.parametrize(("model", "effort", "inputs"), [
    pytest.param("@cf/zai-org/glm-4.7-flash", None, {}, id="no-effort-sends-nothing"),
    pytest.param("@cf/zai-org/glm-4.7-flash", "none", {"chat_template_kwargs": {"enable_thinking": False}}, id="none-switches-off"),
    pytest.param("@cf/zai-org/glm-4.7-flash", "medium", {"reasoning_effort": "medium"}, id="openai-value-passes"),
    pytest.param("@cf/zai-org/glm-4.7-flash", "xhigh", {"reasoning_effort": "high"}, id="xhigh-is-the-strongest"),
    pytest.param("@cf/zai-org/glm-4.7-flash", "minimal", {"reasoning_effort": "low"}, id="minimal-is-the-weakest"),
    pytest.param("@cf/moonshotai/kimi-k2.6", "none", {"chat_template_kwargs": {"thinking": False}}, id="kimi-has-its-own-switch"),
    pytest.param("@cf/deepseek-ai/deepseek-v4-flash-0731", "none", {"reasoning_effort": "none"}, id="an-own-none-effort"),
    pytest.param("@cf/zai-org/glm-5.3-flash", "none", {"reasoning_effort": "low"}, id="cannot-stop-thinking-gets-the-least"),
    pytest.param("@cf/moonshotai/kimi-k2.7-code", "none", {}, id="always-thinks-no-knob"),
    pytest.param("@cf/meta/llama-3.3-70b-instruct-fp8-fast", "high", {}, id="no-reasoning-nothing-sent"),
    pytest.param("@cf/unlisted/model", "high", {}, id="unlisted-nothing-sent"),
])
def test_reasoning_effort_becomes_each_models_own_inputs(model, effort, inputs):
    assert catalog.reasoning_inputs(model, effort) == inputs


def test_only_values_a_model_takes_are_ever_sent():
    for model in catalog.MODELS:
        for effort in catalog.EFFORTS:
            sent = catalog.reasoning_inputs(model.id, effort)
            reasoning = model.reasoning
            if "reasoning_effort" in sent:
                assert reasoning is not None and sent["reasoning_effort"] in reasoning.efforts, (model.id, effort)
            if "chat_template_kwargs" in sent:
                assert reasoning is not None and list(sent["chat_template_kwargs"]) == [reasoning.switch], (model.id, effort)


def test_sampling_ranges_are_each_models_own_and_a_fallback_gets_values_clamped_into_its_own():
    assert catalog.sampling_range("@cf/zai-org/glm-4.7-flash", "presence_penalty") == (-2.0, 2.0)
    assert catalog.sampling_range("@cf/meta/llama-4-scout-17b-16e-instruct", "presence_penalty") == (0.0, 2.0)
    assert catalog.sampling_range("@cf/meta/llama-3.3-70b-instruct-fp8-fast", "temperature") == (0.0, 5.0)
    inputs = {"messages": [], "presence_penalty": -0.5, "temperature": 4.0, "top_p": 0.5}
    assert catalog.clamped_sampling("@cf/meta/llama-4-scout-17b-16e-instruct", inputs) == {"presence_penalty": 0.0}
    assert catalog.clamped_sampling("@cf/zai-org/glm-4.7-flash", inputs) == {"temperature": 2.0}


def test_the_emulator_gets_the_whole_catalog_as_json():
    data = json.loads(catalog.as_json())
    assert data["checked"] == catalog.CHECKED
    assert set(data["models"]) == {model.id for model in catalog.MODELS}
    glm = data["models"]["@cf/zai-org/glm-4.7-flash"]
    assert glm["framing"] == "openai" and glm["reasoning"]["switch"] == "enable_thinking" and glm["ranges"]["temperature"] == [0.0, 2.0]
    assert data["retired"]["@cf/moonshotai/kimi-k2.5"]["aliased_to"] == "@cf/moonshotai/kimi-k2.6"


def test_a_binding_call_reads_the_gateway_log_id_only_when_no_other_call_overlapped_it():
    from chat.model.call import CallOverlaps

    calls = CallOverlaps()
    alone = calls.begin()
    assert calls.end(alone), "no other call: the binding's last id is this call's"
    first = calls.begin()
    second = calls.begin()
    assert not calls.end(first) and not calls.end(second), "either could have set the binding's last id"
    late = calls.begin()
    after = calls.begin()
    assert not calls.end(after), "a call that timed out is still running until it settles"
    calls.end(late)
    assert calls.end(calls.begin()), "once it settled, the next call is alone again"
    assert not calls.end(alone), "ending twice reads nothing"


def test_a_conversation_keeps_its_session_and_no_other_client_or_chat_shares_it():
    from chat.model.call import session_key
    from chat.turn import ChatTurn

    def turn(*contents: str, chat_id: str | None = None, system: bool = False) -> ChatTurn:
        roles = ["user", "assistant"]
        messages = [{"role": roles[i % 2], "content": text} for i, text in enumerate(contents)]
        if system:
            messages.insert(0, {"role": "system", "content": "Be brief."})
        return ChatTurn(messages=tuple(messages), max_tokens=10, temperature=None, chat_id=chat_id)

    first, later = turn("Hi"), turn("Hi", "Hello!", "How are you?")
    assert session_key(first, "ip:a") == session_key(later, "ip:a"), "every turn of one conversation"
    assert session_key(first, "ip:a") != session_key(first, "ip:b"), "another client's conversation, however it opens"
    assert session_key(turn("Hi", system=True), "ip:a") != session_key(turn("Bye", system=True), "ip:a"), (
        "a system message first: the first user message still tells conversations apart"
    )
    assert session_key(turn("Hi", chat_id="c1"), "ip:a") == session_key(turn("Other", chat_id="c1"), "ip:a")
    assert session_key(turn("Hi", chat_id="c1"), "ip:a") != session_key(turn("Hi", chat_id="c2"), "ip:a")
    assert session_key(turn("\ud800 lone"), "ip:a").startswith("ses-")


@pytest.mark.parametrize(("gateway", "named"), [
    pytest.param({"cache_ttl": 60}, "gateway.cache_ttl", id="ttl"),
    pytest.param({"cacheKey": "k"}, "gateway.cacheKey", id="binding-spelling"),
    pytest.param({"<script>\u0000": 1}, "gateway", id="unknown-key-not-echoed"),
    pytest.param({"skip_cache": "yes"}, "gateway.skip_cache", id="skip-cache-not-a-boolean"),
    pytest.param([True], "gateway", id="not-an-object"),
])
def test_a_gateway_option_a_client_may_not_set_is_a_400_naming_it(gateway, named):
    from chat.api.validation import validate_chat
    from chat.web.errors import ApiError

    config = Config.from_env(production_vars().get)
    with pytest.raises(ApiError) as refused:
        validate_chat({"messages": [{"role": "user", "content": "Hi"}], "gateway": gateway}, config)
    assert refused.value.status == 400 and refused.value.param == named and "<script>" not in refused.value.message
    assert validate_chat({"messages": [{"role": "user", "content": "Hi"}], "gateway": {"skip_cache": None}}, config).skip_cache is False
