"""Workers AI's text-generation models as this Worker knows them: data, with its date and
sources. Pure Python: the Worker's config check and request checks read it, and the dev
launchers hand it to the Workers AI emulator (`as_json`), which streams each model the way
the real binding does. docs/models.md, "The model catalog", says how to refresh it.

Checked 2026-12-01 against Cloudflare's own pages (sources in SOURCES): each model's page
(its properties and input/output schemas), the Workers AI changelog, and the errors table.
The stream shape of OpenAI-style models is not in any schema; it comes from the 2026-02-17
changelog entry and cloudflare/ai's workers-ai-provider 4.0.0 tests (fixtures of real
streams). Where a page and the changelog disagree the changelog wins, because the model
pages share a generated template (Kimi K2.6's thinking switch is `thinking`, not the
template's `enable_thinking`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Literal

CHECKED = "2026-12-01"

SOURCES = (
    "https://developers.cloudflare.com/workers-ai/models/ (each model's page)",
    "https://developers.cloudflare.com/changelog/post/2026-05-08-planned-model-deprecations/",
    "https://developers.cloudflare.com/workers-ai/changelog/ (2026-02-17: finish_reason on the usage chunk)",
    "https://developers.cloudflare.com/changelog/ (2026-04-20: Kimi K2.6 on Workers AI; its reasoning field and switch)",
    "https://developers.cloudflare.com/changelog/ (2026-07-28: models that require the Workers Paid plan)",
    "https://developers.cloudflare.com/workers-ai/platform/errors/ (5007, 5035, 3040; last updated 2026-09-17)",
    "https://developers.cloudflare.com/workers-ai/features/prompt-caching/",
    "https://developers.cloudflare.com/workers-ai/features/json-mode/ (read 2026-12-02: JSON mode does not stream)",
    "cloudflare-docs src/content/workers-ai-models/<model>.json (each model's response_format, read 2026-12-02)",
    "https://developers.cloudflare.com/workers-ai/features/reject-if-busy/ and changelog 2026-09-17 (rejectIfBusy: 429, 3040)",
    "github.com/cloudflare/ai packages/workers-ai-provider 4.0.0: src/streaming.ts, test/stream-text.test.ts",
    "cloudflare-docs src/content/workers-ai-models/<model>.json, properties: {\"property_id\": \"vision\", \"value\": \"true\"}"
    " (read 2026-12-02; the page's \"Vision: Yes\" row; docs/images.md)",
)

Framing = Literal["native", "openai"]
# What a turn may need of a model: tools, an answer in a JSON mode (response_format), or
# sight of its images.
Capability = Literal["tools", "json_object", "json_schema", "vision"]
# OpenAI's reasoning_effort values (what clients send), weakest first.
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")

# The sampling ranges of the two schema families on the model pages. Models of the OpenAI
# template take temperature 0-2; the native family 0-5, with narrower penalties on some.
_OPENAI_RANGES = MappingProxyType(
    {"temperature": (0.0, 2.0), "top_p": (0.0, 1.0), "frequency_penalty": (-2.0, 2.0), "presence_penalty": (-2.0, 2.0)}
)
_NATIVE_RANGES = MappingProxyType(
    {"temperature": (0.0, 5.0), "top_p": (0.001, 1.0), "frequency_penalty": (-2.0, 2.0), "presence_penalty": (-2.0, 2.0)}
)
_NATIVE_POSITIVE_PENALTIES = MappingProxyType(
    {"temperature": (0.0, 5.0), "top_p": (0.001, 1.0), "frequency_penalty": (0.0, 2.0), "presence_penalty": (0.0, 2.0)}
)
# An id the catalog does not list (ALLOW_UNLISTED_MODELS): the widest ranges any model takes.
UNLISTED_RANGES = _NATIVE_RANGES


@dataclass(frozen=True, kw_only=True, slots=True)
class Reasoning:
    """How a model thinks out loud. `field`: the delta field its reasoning streams in (None:
    inline in the text, as `<think>`, or not streamed); `on_by_default`; `switch`: the
    `chat_template_kwargs` key that turns it off and on (None: it cannot be switched);
    `efforts`: the `reasoning_effort` values its schema takes (empty: none)."""

    field: str | None
    on_by_default: bool = True
    switch: str | None = "enable_thinking"
    efforts: tuple[str, ...] = ("low", "medium", "high")


@dataclass(frozen=True, kw_only=True, slots=True)
class JsonMode:
    """How a model takes `response_format` (its page's input schema). `kinds`: the types it
    takes; `streams`: whether it streams an answer in JSON mode (False: the Worker asks for
    the whole answer and streams it on as one piece, docs/structured-outputs.md)."""

    kinds: tuple[Literal["json_object", "json_schema"], ...] = ("json_object", "json_schema")
    streams: bool = True
    # "openai": `json_schema: {name, description?, schema, strict}` (the chat-completions
    # schema family); "cloudflare": the JSON-mode page's `json_schema: <the schema itself>`.
    shape: Literal["openai", "cloudflare"] = "openai"


# The two families of the model pages' `response_format` (read 2026-12-02, docs/structured-outputs.md):
# the chat-completions schemas take OpenAI's shape, and say nothing of streaming with it
# (that vLLM streams guided decoding is this catalog's assumption, kept as each model's note
# until a page says otherwise); the older "JSON Mode" schemas take Cloudflare's shape and
# refuse a stream (the JSON-mode page: "JSON Mode currently doesn't support streaming";
# 5023 "JSON Schema mode is not supported with stream mode", cloudflare/agents #1685).
OPENAI_JSON = JsonMode()
LEGACY_JSON = JsonMode(streams=False, shape="cloudflare")


@dataclass(frozen=True, kw_only=True, slots=True)
class Model:
    """A current model. `context_window` in tokens (None: its page states none); `paid_only`:
    refused on the Workers Free plan (5035); `ranges`: the sampling parameters its schema
    bounds; `note`: where the evidence is thin."""

    id: str
    framing: Framing
    reasoning: Reasoning | None
    tools: bool
    context_window: int | None
    paid_only: bool = False
    prompt_caching: bool = False  # reports cached prompt tokens in its usage
    json_mode: JsonMode | None = None  # None: it takes no response_format
    vision: bool = False  # takes image parts in its messages (its page's "Vision" property)
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=lambda: _OPENAI_RANGES)
    note: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Retired:
    """A model Workers AI no longer serves: 5007 after `retired`, unless it is `aliased_to`
    another (the binding then answers with that one, at that one's price)."""

    id: str
    retired: str
    aliased_to: str | None = None


def _openai(model_id: str, context_window: int | None, reasoning: Reasoning | None = None, **extra: object) -> Model:
    settings: dict[str, object] = {"tools": True, "prompt_caching": True, "json_mode": OPENAI_JSON, **extra}
    return Model(id=model_id, framing="openai", reasoning=reasoning, context_window=context_window, **settings)  # type: ignore[arg-type]


_VLLM_THINKING = Reasoning(field="reasoning_content")
_JSON_UNCHECKED = "response_format: its page was not checked yet (2026-12-02), so it is not offered one."
_KIMI_THINKING = Reasoning(field="reasoning", switch="thinking")

MODELS: tuple[Model, ...] = (
    # The three Cloudflare recommends in place of the models retired on 2026-05-30.
    _openai("@cf/zai-org/glm-4.7-flash", 131_072, _VLLM_THINKING),
    _openai("@cf/google/gemma-4-26b-a4b-it", 256_000, _VLLM_THINKING, vision=True,
            note="A reported issue (cloudflare-docs #29731) says 131,072 tokens are enforced, not 256,000."),
    _openai("@cf/moonshotai/kimi-k2.6", 262_144, _KIMI_THINKING, paid_only=True, vision=True),
    _openai("@cf/moonshotai/kimi-k2.7-code", 262_144, Reasoning(field="reasoning", switch=None, efforts=()), paid_only=True,
            json_mode=None, vision=True, note="Reasoning is always on (its schema locks enable_thinking to true). response_format: not checked yet."),
    _openai("@cf/zai-org/glm-5.2", 262_144, _VLLM_THINKING, paid_only=True, json_mode=None, note=_JSON_UNCHECKED),
    _openai("@cf/zai-org/glm-5.3", 1_310_720, _VLLM_THINKING, paid_only=True, json_mode=None, note=_JSON_UNCHECKED),
    _openai("@cf/zai-org/glm-5.3-flash", 1_310_720, Reasoning(field="reasoning_content", switch=None, efforts=("low", "high", "max")),
            paid_only=True, vision=True, note="Reasoning cannot be turned off; unlisted efforts normalise to max."),
    _openai("@cf/deepseek-ai/deepseek-v4-flash-0731", 1_048_576,
            Reasoning(field="reasoning_content", switch=None, efforts=("none", "low", "high", "max")), paid_only=True),
    _openai("@cf/deepseek-ai/deepseek-v4-pro-0813", 1_048_576, Reasoning(field="reasoning_content", switch=None), paid_only=True,
            json_mode=None, note=_JSON_UNCHECKED),
    _openai("@cf/qwen/qwen3.8-27b", 262_144, _VLLM_THINKING, vision=True),
    _openai("@cf/nvidia/nemotron-3-120b-a12b", 256_000, _VLLM_THINKING),
    # Served the OpenAI way, with the native family's sampling ranges.
    # Their chat schema has no reasoning_effort (only the Responses input's reasoning.effort).
    _openai("@cf/openai/gpt-oss-120b", 128_000, Reasoning(field="reasoning_content", switch=None, efforts=()), ranges=_NATIVE_RANGES,
            json_mode=LEGACY_JSON,
            note="Reasoning cannot be turned off (its page). Whether the binding streams it, or answers whole, is not documented. "
                 "Its page's copies disagree on response_format (the newer: JSON Mode; workerd's types: OpenAI's shape)."),
    _openai("@cf/openai/gpt-oss-20b", 128_000, Reasoning(field="reasoning_content", switch=None, efforts=()), ranges=_NATIVE_RANGES,
            json_mode=LEGACY_JSON, note="As gpt-oss-120b."),
    _openai("@cf/qwen/qwen3-30b-a3b-fp8", 32_768, Reasoning(field="reasoning_content", switch=None, efforts=()),
            ranges=_NATIVE_RANGES, prompt_caching=False, json_mode=LEGACY_JSON),
    Model(id="@cf/ibm-granite/granite-4.0-h-micro", framing="openai", reasoning=None, tools=False, context_window=131_000,
          ranges=_NATIVE_RANGES, json_mode=LEGACY_JSON, note="Its page's copies disagree on response_format (JSON Mode, or none)."),
    # Native frames: {"response": ...} events, usage in the last one.
    Model(id="@cf/meta/llama-3.3-70b-instruct-fp8-fast", framing="native", reasoning=None, tools=True, context_window=24_000,
          ranges=_NATIVE_RANGES, json_mode=LEGACY_JSON),
    Model(id="@cf/meta/llama-3.1-8b-instruct-fast", framing="native", reasoning=None, tools=False, context_window=None,
          ranges=_NATIVE_POSITIVE_PENALTIES, note="Its page states no context window and no function calling."),
    Model(id="@cf/meta/llama-4-scout-17b-16e-instruct", framing="native", reasoning=None, tools=True, context_window=131_000,
          ranges=_NATIVE_POSITIVE_PENALTIES, json_mode=LEGACY_JSON, vision=True,
          note="Vision: its page's row says Yes; the page's JSON has no vision property (its schema takes image_url data URLs)."),
    Model(id="@cf/mistralai/mistral-small-3.1-24b-instruct", framing="native", reasoning=None, tools=False,
          context_window=128_000, ranges=_NATIVE_POSITIVE_PENALTIES,
          note="Its page has guided_json, not response_format. Its schema takes image_url parts, but its page has no vision "
               "property, so it is not sent images."),
    Model(id="@cf/qwen/qwq-32b", framing="native", reasoning=Reasoning(field=None, switch=None, efforts=()), tools=False,
          context_window=24_000, ranges=_NATIVE_POSITIVE_PENALTIES, note="Thinks inside the answer text."),
    Model(id="@cf/deepseek-ai/deepseek-r1-distill-qwen-32b", framing="native", reasoning=Reasoning(field=None, switch=None, efforts=()),
          tools=False, context_window=80_000, ranges=_NATIVE_RANGES, json_mode=LEGACY_JSON,
          note="Thinks inside the answer text (so its JSON-mode answer may not be JSON alone). Listed on the JSON-mode page."),
)

# The changelog of 2026-05-08: eighteen models retired on 2026-05-30.
_MAY_2026 = "2026-05-30"
RETIRED: tuple[Retired, ...] = (
    Retired(id="@cf/moonshotai/kimi-k2.5", retired=_MAY_2026, aliased_to="@cf/moonshotai/kimi-k2.6"),
    *(
        Retired(id=model_id, retired=_MAY_2026)
        for model_id in (
            "@hf/meta-llama/meta-llama-3-8b-instruct",
            "@cf/meta/llama-3-8b-instruct",
            "@cf/meta/llama-3-8b-instruct-awq",
            "@cf/meta/llama-3.1-8b-instruct",
            "@cf/meta/llama-3.1-8b-instruct-awq",
            "@cf/meta/llama-3.1-70b-instruct",
            "@cf/meta/llama-2-7b-chat-int8",
            "@cf/meta/llama-2-7b-chat-fp16",
            "@cf/mistral/mistral-7b-instruct-v0.1",
            "@hf/mistral/mistral-7b-instruct-v0.2",
            "@hf/google/gemma-7b-it",
            "@cf/google/gemma-3-12b-it",
            "@hf/nousresearch/hermes-2-pro-mistral-7b",
            "@cf/microsoft/phi-2",
            "@cf/defog/sqlcoder-7b-2",
            "@cf/unum/uform-gen2-qwen-500m",
            "@cf/facebook/bart-large-cnn",
        )
    ),
)

_BY_ID: Mapping[str, Model] = MappingProxyType({model.id: model for model in MODELS})
_RETIRED_BY_ID: Mapping[str, Retired] = MappingProxyType({model.id: model for model in RETIRED})


def lookup(model_id: str) -> Model | Retired | None:
    """The catalog's entry for `model_id`: a current Model, a Retired one, or None (unlisted)."""
    return _BY_ID.get(model_id) or _RETIRED_BY_ID.get(model_id)


def current(model_id: str) -> Model | None:
    return _BY_ID.get(model_id)


def framing_of(model_id: str) -> Framing | None:
    """The frames `model_id` streams, for the Reframer's fast paths; None for a model the
    catalog does not know (the normalizer reads either)."""
    model = _BY_ID.get(model_id)
    return None if model is None else model.framing


def can(model_id: str, capability: Capability) -> bool:
    """Whether `model_id` can answer a turn that needs `capability`, as its catalog entry
    says. An id the catalog does not list (ALLOW_UNLISTED_MODELS) is assumed to: the
    operator chose it, and the binding's shared input type takes both."""
    model = _BY_ID.get(model_id)
    if model is None:
        return True
    if capability == "tools":
        return model.tools
    if capability == "vision":
        return model.vision
    return model.json_mode is not None and capability in model.json_mode.kinds


def json_mode(model_id: str) -> JsonMode | None:
    """How `model_id` takes response_format (an unlisted id: the OpenAI shape, streamed)."""
    model = _BY_ID.get(model_id)
    return JsonMode() if model is None else model.json_mode


def sampling_range(model_id: str, parameter: str) -> tuple[float, float]:
    """The range of `parameter` that `model_id`'s schema allows (the widest known for an
    unlisted model)."""
    model = _BY_ID.get(model_id)
    return (model.ranges if model is not None else UNLISTED_RANGES)[parameter]


def clamped_sampling(model_id: str, inputs: Mapping[str, object]) -> dict[str, object]:
    """The sampling parameters of `inputs` moved into `model_id`'s own ranges. A request
    is checked against the model it names; a fallback that takes less gets the nearest
    value it takes rather than an invalid input (8001) that would fail the fallback."""
    ranges = _BY_ID[model_id].ranges if model_id in _BY_ID else UNLISTED_RANGES
    clamped: dict[str, object] = {}
    for parameter, (low, high) in ranges.items():
        value = inputs.get(parameter)
        if isinstance(value, float | int) and not isinstance(value, bool) and not low <= value <= high:
            clamped[parameter] = min(max(float(value), low), high)
    return clamped


def reasoning_inputs(model_id: str, effort: str | None) -> dict[str, object]:
    """The binding inputs that ask `model_id` for reasoning at `effort` (one of EFFORTS;
    None: the model's default, nothing sent).

    `none` turns thinking off with the model's switch (or its own "none" effort); a model
    that cannot stop thinking gets its lowest effort instead. `minimal` is sent as the
    lowest effort the model takes, `xhigh` as its highest. A model without reasoning, or
    an unlisted one, gets nothing: there is no schema to follow.
    """
    model = _BY_ID.get(model_id)
    if effort is None or model is None or model.reasoning is None:
        return {}
    reasoning = model.reasoning
    inputs: dict[str, object] = {}
    wants_thinking = effort != "none"
    if reasoning.switch is not None and wants_thinking != reasoning.on_by_default:
        inputs["chat_template_kwargs"] = {reasoning.switch: wants_thinking}
    if reasoning.efforts:
        if effort in reasoning.efforts:
            inputs["reasoning_effort"] = effort
        elif effort == "none" and reasoning.switch is None:
            inputs["reasoning_effort"] = _weakest(reasoning.efforts)
        elif effort in ("minimal", "low"):
            inputs["reasoning_effort"] = _weakest(reasoning.efforts)
        elif effort in ("high", "xhigh"):
            inputs["reasoning_effort"] = _strongest(reasoning.efforts)
    return inputs


_EFFORT_ORDER = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


def _weakest(efforts: tuple[str, ...]) -> str:
    return min((e for e in efforts if e != "none"), key=_EFFORT_ORDER.index)


def _strongest(efforts: tuple[str, ...]) -> str:
    return max(efforts, key=_EFFORT_ORDER.index)


def _plain(entry: Model | Retired) -> dict[str, object]:
    plain = {name: getattr(entry, name) for name in entry.__dataclass_fields__}
    if isinstance(entry, Model):
        plain["ranges"] = dict(entry.ranges)
        plain["reasoning"] = None if entry.reasoning is None else asdict(entry.reasoning)
        plain["json_mode"] = None if entry.json_mode is None else asdict(entry.json_mode)
    return plain


def as_json() -> str:
    """The catalog for the emulator (ai_emulator/emulator.js reads this shape)."""
    return json.dumps({
        "checked": CHECKED,
        "models": {model.id: _plain(model) for model in MODELS},
        "retired": {model.id: _plain(model) for model in RETIRED},
    })
