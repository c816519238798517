"""Today's Workers AI in the real runtime: the default configuration, every model of the
catalog in its own framing on every surface, reasoning controls, AI Gateway, prompt
caching, and a model Workers AI does not have. The emulator streams each model as the
catalog says (no --ai-format), and its `ai_run` line shows what reached the binding."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from chat.model import catalog
from tests.harness.client import ChatResult, chat
from tests.harness.runtime import LocalRuntime, RuntimeOptions

ROOT = Path(__file__).resolve().parents[2]
VARS = tomllib.loads((ROOT / "wrangler.toml").read_text(encoding="utf-8"))["vars"]
DEFAULT_MODEL = VARS["MODEL"]
ALL_MODELS = [model.id for model in catalog.MODELS]
THINKING = [m.id for m in catalog.MODELS if m.framing == "openai" and m.reasoning is not None and m.reasoning.field]
GATEWAY = "team-gateway"
NOT_A_MODEL = "@cf/example/no-such-model"

# Each surface's view of the Worker as it ships (wrangler.toml's [vars]).
DEFAULTS = RuntimeOptions(ai_format=None, ai_pace=0)
# Every catalog model served (the first is MODEL, the rest FALLBACK_MODELS, so a request may
# name any of them), behind a gateway.
EVERY_MODEL = RuntimeOptions(
    ai_format=None, ai_pace=0,
    variables=(("MODEL", ALL_MODELS[0]), ("FALLBACK_MODELS", ",".join(ALL_MODELS[1:])), ("AI_GATEWAY_ID", GATEWAY)),
)
# A model Workers AI does not have, allowed by the config check on purpose.
MISSING = RuntimeOptions(ai_format=None, ai_pace=0, variables=(
    ("MODEL", NOT_A_MODEL), ("FALLBACK_MODELS", ""), ("ALLOW_UNLISTED_MODELS", "true"),
))


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def ui_message(text: str, *, id: str = "u1", role: str = "user") -> dict[str, Any]:
    return {"id": id, "role": role, "parts": [{"type": "text", "text": text}]}


def runs(runtime: LocalRuntime, since: int) -> list[dict[str, Any]]:
    return [record for record in runtime.records(since) if record.get("event") == "ai_run"]


def sse_payloads(body: bytes) -> list[Any]:
    """The `data:` payloads of an event stream (JSON, or "[DONE]")."""
    payloads = []
    for line in body.decode().split("\n"):
        if line.startswith("data:"):
            data = line[5:].strip()
            payloads.append(data if data == "[DONE]" else json.loads(data))
    return payloads


def upstream_text(body: bytes, model: catalog.Model) -> tuple[str, str]:
    """(answer text, reasoning text) of the model's own stream, read the way its framing is."""
    text, reasoning = [], []
    for payload in sse_payloads(body):
        if payload == "[DONE]":
            break
        if model.framing == "native":
            text.append(str(payload.get("response") or ""))
        elif payload.get("choices"):
            delta = payload["choices"][0]["delta"]
            text.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or delta.get("reasoning") or "")
    return "".join(text), "".join(reasoning)


def protocol_texts(result: ChatResult) -> tuple[str, str]:
    reasoning = "".join(e.data["text"] for e in result.events if e.name == "reasoning" and e.data)
    return result.text, reasoning


def openai_texts(body: bytes) -> tuple[str, str, dict[str, Any]]:
    text, reasoning, usage = [], [], {}
    for payload in sse_payloads(body):
        if payload == "[DONE]":
            continue
        for choice in payload.get("choices", []):
            text.append(choice["delta"].get("content") or "")
            reasoning.append(choice["delta"].get("reasoning_content") or "")
        usage = payload.get("usage") or usage
    return "".join(text), "".join(reasoning), usage


def ui_texts(body: bytes) -> tuple[str, str, dict[str, Any]]:
    chunks = [p for p in sse_payloads(body) if p != "[DONE]"]
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    reasoning = "".join(c["delta"] for c in chunks if c["type"] == "reasoning-delta")
    finish = next(c for c in chunks if c["type"] == "finish")
    return text, reasoning, finish


async def test_the_default_configuration_answers_on_every_route(start_runtime, http):
    runtime = start_runtime(DEFAULTS)
    assert catalog.current(DEFAULT_MODEL) is not None, "wrangler.toml's MODEL is a current model"
    direct = await chat(http, runtime.url, {"messages": user("Hello")})
    assert direct.status == 200 and direct.terminal.name == "done" and direct.text
    assert direct.events[0].data["model"] == DEFAULT_MODEL

    raw = await http.post(runtime.url + "/api/chat/raw", json={"messages": user("Hello")})
    assert raw.status_code == 200 and sse_payloads(raw.content)[-1] == "[DONE]"

    ui = await http.post(runtime.url + "/api/ui-chat", json={"id": "chat1", "messages": [ui_message("Hello")]})
    assert ui.status_code == 200 and ui_texts(ui.content)[0]

    streamed = await http.post(runtime.url + "/v1/chat/completions",
                               json={"model": DEFAULT_MODEL, "messages": user("Hello"), "stream": True})
    assert streamed.status_code == 200 and openai_texts(streamed.content)[0]
    collected = await http.post(runtime.url + "/v1/chat/completions", json={"model": DEFAULT_MODEL, "messages": user("Hello")})
    assert collected.status_code == 200 and collected.json()["choices"][0]["message"]["content"]

    resumable = await chat(http, runtime.url, {"messages": user("Hello"), "resumable": True})
    assert resumable.status == 200 and resumable.terminal.name == "done" and resumable.text


@pytest.mark.parametrize("model", catalog.MODELS, ids=lambda model: model.id)
async def test_every_catalog_model_streams_its_own_text_and_reasoning_on_every_surface(start_runtime, http, model):
    runtime = start_runtime(EVERY_MODEL)
    messages = user(f"Describe {model.id} in a few words.")
    raw = await http.post(runtime.url + "/api/chat/raw", json={"model": model.id, "messages": messages})
    assert raw.status_code == 200
    text, reasoning = upstream_text(raw.content, model)
    assert text, "the emulator answered in the model's framing"
    assert bool(reasoning) == (model.id in THINKING), "thinking models think first, the others do not"

    direct = await chat(http, runtime.url, {"model": model.id, "messages": messages})
    assert direct.terminal.name == "done" and direct.events[0].data["model"] == model.id
    assert protocol_texts(direct) == (text, reasoning)
    assert direct.terminal.data["chars"] == len(text), "reasoning is never counted as answer text"
    assert direct.terminal.data["skipped"] == 0

    openai = await http.post(runtime.url + "/v1/chat/completions", json={"model": model.id, "messages": messages, "stream": True})
    assert openai_texts(openai.content)[:2] == (text, reasoning)
    collected = (await http.post(runtime.url + "/v1/chat/completions", json={"model": model.id, "messages": messages})).json()
    message = collected["choices"][0]["message"]
    assert (message["content"], message.get("reasoning_content", "")) == (text, reasoning)

    ui = await http.post(runtime.url + "/api/ui-chat", json={"model": model.id, "messages": [ui_message(messages[0]["content"])]})
    assert ui_texts(ui.content)[:2] == (text, reasoning)


@pytest.mark.expected_errors("model_not_served")
async def test_a_model_workers_ai_does_not_have_is_the_servers_fault_on_every_route_and_raises_the_alarm(start_runtime, http):
    runtime = start_runtime(MISSING)
    since = len(runtime.lines)
    for path in ("/api/chat", "/api/chat/raw"):
        response = await http.post(runtime.url + path, json={"messages": user("Hello")})
        assert response.status_code == 502 and response.json()["error"]["code"] == "model_misconfigured", path
        assert NOT_A_MODEL not in response.text, "the model's name is not echoed"
    resumable = await http.post(runtime.url + "/api/chat", json={"messages": user("Hello"), "resumable": True})
    assert resumable.status_code == 502 and resumable.json()["error"]["code"] == "model_misconfigured"
    ui = await http.post(runtime.url + "/api/ui-chat", json={"messages": [ui_message("Hello")]})
    assert ui.status_code == 502 and ui.json()["error"]["code"] == "model_misconfigured"
    openai = await http.post(runtime.url + "/v1/chat/completions", json={"model": NOT_A_MODEL, "messages": user("Hello")})
    assert openai.status_code == 502
    assert openai.json()["error"]["code"] == "model_misconfigured" and openai.json()["error"]["type"] == "server_error"
    # Log lines arrive after their responses, the Worker's and the emulator's on their own pipes.
    calls = 5
    failed = runtime.wait_for_count("chat_start_failed", calls, since=since)
    runtime.wait_until_quiet()
    refusals = [record for record in runs(runtime, since) if record.get("refused")]
    assert refusals and all(record["refused"] == "5007" for record in refusals), "the binding said 5007 each time"
    assert len(failed) == calls and all(r["binding_code"] == 5007 and r["code"] == "model_misconfigured" for r in failed)
    # The alarm goes to stderr (console.error), the other lines to stdout: the two pipes are
    # read apart, so the last alarm may be read after the last chat_start_failed.
    alarms = runtime.wait_for_count("model_not_served", len(failed), since=since)
    assert len(alarms) == len(failed), "one alarm line for each call the stale configuration failed"
    assert all((r["level"], r["binding_code"], r["setting"]) == ("error", 5007, "MODEL") for r in alarms)
    assert all(r["model"] == NOT_A_MODEL for r in alarms), "the alarm names the configured model"


async def test_reasoning_effort_reaches_the_binding_in_each_models_own_inputs(start_runtime, http):
    runtime = start_runtime(EVERY_MODEL)
    cases = [
        ("@cf/zai-org/glm-4.7-flash", "none", {"chat_template_kwargs": {"enable_thinking": False}}),
        ("@cf/zai-org/glm-4.7-flash", "high", {"reasoning_effort": "high"}),
        ("@cf/zai-org/glm-4.7-flash", "minimal", {"reasoning_effort": "low"}),
        ("@cf/moonshotai/kimi-k2.6", "none", {"chat_template_kwargs": {"thinking": False}}),
        ("@cf/meta/llama-3.3-70b-instruct-fp8-fast", "high", {}),
    ]
    for model, effort, sent in cases:
        since = len(runtime.lines)
        for path, body in (
            ("/api/chat", {"model": model, "messages": user("Think?"), "reasoning_effort": effort}),
            ("/v1/chat/completions", {"model": model, "messages": user("Think?"), "reasoning_effort": effort, "stream": True}),
            ("/api/ui-chat", {"model": model, "messages": [ui_message("Think?")], "reasoning_effort": effort}),
        ):
            response = await http.post(runtime.url + path, json=body)
            assert response.status_code == 200, (path, response.text)
            if effort == "none":
                assert b"reasoning" not in response.content, (path, "thinking switched off")
        settings = [record["settings"] for record in runs(runtime, since)]
        assert len(settings) == 3
        for setting in settings:
            assert {key: setting[key] for key in ("reasoning_effort", "chat_template_kwargs") if key in setting} == sent, (model, effort)


@pytest.mark.parametrize(("path", "body", "field"), [
    pytest.param("/api/chat", {"reasoning_effort": "extreme"}, "reasoning_effort", id="chat-unknown-effort"),
    pytest.param("/api/ui-chat", {"reasoning_effort": 3}, "reasoning_effort", id="ui-chat-effort-not-a-string"),
    pytest.param("/v1/chat/completions", {"reasoning_effort": "max"}, "reasoning_effort", id="openai-effort-not-openais"),
    pytest.param("/api/chat", {"gateway": {"cache_ttl": 3600}}, "gateway.cache_ttl", id="chat-client-set-ttl"),
    pytest.param("/v1/chat/completions", {"gateway": {"metadata": {"a": 1}}}, "gateway.metadata", id="openai-client-set-metadata"),
    pytest.param("/api/ui-chat", {"gateway": {"skip_cache": "yes"}}, "gateway.skip_cache", id="ui-chat-skip-cache-not-a-boolean"),
    pytest.param("/api/chat", {"model": "@cf/meta/llama-3.1-8b-instruct"}, "model", id="chat-model-not-served"),
])
async def test_what_a_client_may_not_set_is_a_400_naming_the_field_in_each_surfaces_shape(start_runtime, http, path, body, field):
    runtime = start_runtime(EVERY_MODEL)
    messages = [ui_message("Hi")] if path == "/api/ui-chat" else user("Hi")
    payload = {"messages": messages, **body}
    if path.startswith("/v1/"):
        payload.setdefault("model", ALL_MODELS[0])
    response = await http.post(runtime.url + path, json=payload)
    assert response.status_code in (400, 404)
    error = response.json()["error"]
    assert field in error["message"]
    if path.startswith("/v1/"):
        assert error["param"] == field and error["type"] == "invalid_request_error"


async def test_the_presence_penalty_range_is_the_models_own(start_runtime, http):
    runtime = start_runtime(EVERY_MODEL)
    ok = await http.post(runtime.url + "/v1/chat/completions",
                         json={"model": "@cf/zai-org/glm-4.7-flash", "messages": user("Hi"), "presence_penalty": -0.5})
    assert ok.status_code == 200, "glm-4.7-flash takes -2 to 2"
    hot = await http.post(runtime.url + "/api/chat", json={"model": "@cf/zai-org/glm-4.7-flash", "messages": user("Hi"), "temperature": 3})
    assert hot.status_code == 400 and "temperature" in hot.json()["error"]["message"], "its temperature stops at 2"


async def test_every_call_goes_through_the_gateway_with_ids_never_content(start_runtime, http):
    runtime = start_runtime(EVERY_MODEL)
    since = len(runtime.lines)
    answer = await chat(http, runtime.url, {"messages": user("A secret question"), "gateway": {"skip_cache": True}},
                        headers={"cf-connecting-ip": "203.0.113.9"})
    assert answer.terminal.name == "done"
    [run] = runs(runtime, since)
    gateway = run["gateway"]
    assert gateway["id"] == GATEWAY and gateway["skipCache"] is True
    metadata = gateway["metadata"]
    assert metadata["request_id"] == answer.events[0].data["request_id"] and metadata["route"] == "chat"
    assert len(metadata["client"]) == 32 and "203.0.113.9" not in json.dumps(metadata), "the client, as a digest"
    assert "secret" not in "\n".join(runtime.own_lines(since)), "no content in any log line"
    log_id = answer.events[0].data["gateway_log_id"]
    assert log_id == run["gateway_log_id"], "meta carries the gateway's log id"
    started = runtime.wait_for_record("chat_stream_started", since=since, request_id=metadata["request_id"])
    assert started["gateway_log_id"] == log_id

    plain = await chat(http, runtime.url, {"messages": user("Another")})
    assert runs(runtime, since)[-1]["gateway"]["skipCache"] is False, "the cache is used unless a client skips it"
    assert plain.terminal.name == "done"


async def test_another_client_never_shares_a_conversations_session(start_runtime, http):
    # Found by the attack on issue 16: with sessions keyed by the conversation alone, a client
    # that guessed another's conversation saw its guess confirmed by cached_tokens.
    runtime = start_runtime(EVERY_MODEL)
    conversation = user("A private question about my account. " * 20)
    victim = await chat(http, runtime.url, {"messages": conversation}, headers={"cf-connecting-ip": "203.0.113.1"})
    guess = await chat(http, runtime.url, {"messages": conversation}, headers={"cf-connecting-ip": "203.0.113.2"})
    assert victim.terminal.name == guess.terminal.name == "done"
    victims, guessers = [r["session_affinity"] for r in runs(runtime, 0)][-2:]
    assert victims != guessers, "the same conversation from two clients: two sessions"
    assert guess.terminal.data["usage"]["cached_tokens"] == 0, "nothing of the victim's is read from the cache"


async def test_a_conversations_turns_share_a_session_and_read_its_prefix_from_the_cache(start_runtime, http):
    runtime = start_runtime(EVERY_MODEL)
    long_question = "Explain prefix caching with an example. " * 20
    first = await chat(http, runtime.url, {"messages": user(long_question)})
    follow_up = user(long_question) + [{"role": "assistant", "content": first.text}, {"role": "user", "content": "And then?"}]
    since = len(runtime.lines)
    second = await chat(http, runtime.url, {"messages": follow_up})
    [first_run, second_run] = [r for r in runs(runtime, 0) if r["session_affinity"]][-2:]
    assert first_run["session_affinity"] == second_run["session_affinity"], "one session for the conversation"
    assert first.terminal.data["usage"]["cached_tokens"] == 0, "the first turn finds nothing cached"
    cached = second.terminal.data["usage"]["cached_tokens"]
    assert cached > 0 and cached <= second.terminal.data["usage"]["prompt_tokens"]
    assert runs(runtime, since)[0]["session_affinity"] == first_run["session_affinity"]

    again = await http.post(runtime.url + "/v1/chat/completions",
                            json={"model": ALL_MODELS[0], "messages": follow_up, "stream": True, "stream_options": {"include_usage": True}})
    assert openai_texts(again.content)[2]["prompt_tokens_details"]["cached_tokens"] > 0
    collected = (await http.post(runtime.url + "/v1/chat/completions", json={"model": ALL_MODELS[0], "messages": follow_up})).json()
    assert collected["usage"]["prompt_tokens_details"]["cached_tokens"] > 0

    turns = [ui_message(long_question, id="a"), ui_message(first.text, id="b", role="assistant"), ui_message("And then?", id="c")]
    for _ in range(2):
        ui = await http.post(runtime.url + "/api/ui-chat", json={"id": "chat-42", "messages": turns})
    first_ui, second_ui = [r["session_affinity"] for r in runs(runtime, 0)][-2:]
    assert first_ui == second_ui != first_run["session_affinity"], "a UI chat's session is its chat id's"
    assert ui_texts(ui.content)[2]["messageMetadata"]["usage"]["cached_tokens"] > 0


async def test_an_answer_that_spent_its_whole_budget_thinking_says_so_on_every_surface(start_runtime, http):
    runtime = start_runtime(EVERY_MODEL)
    budget = {"model": ALL_MODELS[0], "max_tokens": 5}  # less than the thinking it does by default
    direct = await chat(http, runtime.url, {"messages": user("Think hard"), **budget})
    assert direct.terminal.name == "done" and direct.text == "" and protocol_texts(direct)[1]
    assert direct.terminal.data["finish_reason"] == "length" and direct.terminal.data["chars"] == 0, "never a plain complete"
    collected = (await http.post(runtime.url + "/v1/chat/completions", json={"messages": user("Think hard"), **budget})).json()
    assert collected["choices"][0]["finish_reason"] == "length" and collected["choices"][0]["message"]["content"] == ""
    ui = await http.post(runtime.url + "/api/ui-chat", json={"messages": [ui_message("Think hard")], **budget})
    assert ui_texts(ui.content)[2]["finishReason"] == "length"
