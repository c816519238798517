"""response_format as the surfaces read it: the format checked, the models that can answer
it chosen, and each model asked in the shape its schema takes."""

from __future__ import annotations

import pytest

from chat.api.openai import validate_completion
from chat.api.validation import validate_chat, validate_ui_chat
from chat.config import Config
from chat.model import catalog
from chat.model.call import ModelCall, model_call
from chat.turn import OutputFormat
from chat.web.errors import ApiError

GLM = "@cf/zai-org/glm-4.7-flash"  # OpenAI's shape, streamed
LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"  # Cloudflare's JSON mode, answered whole
MISTRAL = "@cf/mistralai/mistral-small-3.1-24b-instruct"  # no response_format
CONFIG = Config(model=MISTRAL, fallback_models=(GLM, LLAMA))
USER = [{"role": "user", "content": "An order"}]
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["id"], "properties": {"id": {"type": "string"}}}
STRICT = {"type": "json_schema", "json_schema": {"name": "order", "schema": SCHEMA, "strict": True, "description": "One order"}}


def refusal(validate, payload) -> ApiError:
    with pytest.raises(ApiError) as caught:
        validate(payload, CONFIG)
    assert caught.value.status == 400
    return caught.value


def test_every_surface_reads_the_same_format_and_leaves_out_models_without_json_mode():
    chat = validate_chat({"messages": USER, "response_format": STRICT}, CONFIG)
    ui = validate_ui_chat({"messages": [{"role": "user", "parts": [{"type": "text", "text": "An order"}]}], "response_format": STRICT}, CONFIG)
    openai = validate_completion({"model": GLM, "messages": USER, "response_format": STRICT}, CONFIG).turn
    expected = OutputFormat(kind="json_schema", name="order", schema=SCHEMA, strict=True, description="One order")
    assert chat.output == ui.output == openai.output == expected
    assert chat.models == ui.models == (GLM, LLAMA), "MISTRAL takes no response_format: left out of MODEL's order"
    assert openai.models == (GLM, LLAMA)


def test_text_is_no_format_at_all():
    assert validate_chat({"messages": USER, "response_format": {"type": "text"}}, CONFIG).output is None
    assert validate_chat({"messages": USER, "response_format": {"type": "text"}}, CONFIG).models == ()


@pytest.mark.parametrize(("response_format", "param"), [
    ({"type": "json"}, "response_format.type"),
    ([], "response_format.type"),
    ({"type": "json_schema"}, "response_format.json_schema"),
    ({"type": "json_schema", "json_schema": {"schema": SCHEMA}}, "response_format.json_schema.name"),
    ({"type": "json_schema", "json_schema": {"name": "x" * 65, "schema": SCHEMA}}, "response_format.json_schema.name"),
    ({"type": "json_schema", "json_schema": {"name": "o", "schema": SCHEMA, "description": 3}}, "response_format.json_schema.description"),
    ({"type": "json_schema", "json_schema": {"name": "o", "schema": SCHEMA, "strict": "yes"}}, "response_format.json_schema.strict"),
    ({"type": "json_schema", "json_schema": {"name": "o", "schema": []}}, "response_format.json_schema.schema"),
    ({"type": "json_schema", "json_schema": {"name": "o", "schema": {"type": "object"}, "strict": True}},
     "response_format.json_schema.schema.additionalProperties"),
])
def test_a_bad_format_is_a_400_naming_the_place(response_format, param):
    error = refusal(validate_chat, {"messages": USER, "response_format": response_format})
    assert error.param == param, error.message


def test_a_named_model_without_json_mode_is_refused_and_no_model_left_is_refused_too():
    named = refusal(validate_chat, {"messages": USER, "model": MISTRAL, "response_format": STRICT})
    assert named.param == "response_format" and "cannot answer to a JSON schema" in named.message
    alone = Config(model=MISTRAL)
    with pytest.raises(ApiError) as caught:
        validate_chat({"messages": USER, "response_format": {"type": "json_object"}}, alone)
    assert caught.value.param == "response_format" and "none of the models" in caught.value.message


def test_tools_and_a_format_together_need_a_model_that_does_both():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    turn = validate_chat({"messages": USER, "tools": tools, "response_format": STRICT}, CONFIG)
    assert turn.models == (GLM, LLAMA) and all(catalog.can(m, "tools") and catalog.can(m, "json_schema") for m in turn.models)
    granite = "@cf/ibm-granite/granite-4.0-h-micro"  # JSON mode, no tools
    with pytest.raises(ApiError) as caught:
        validate_chat({"messages": USER, "tools": tools, "response_format": STRICT}, Config(model=granite, fallback_models=(MISTRAL,)))
    assert caught.value.param == "tools"


def test_each_model_is_asked_in_its_own_shape_and_the_whole_answer_where_it_cannot_stream():
    turn = validate_chat({"messages": USER, "response_format": STRICT}, CONFIG)
    call = model_call(turn, CONFIG, request_id="r", route="chat", client=None)
    openai_shape = call.inputs_for(GLM)
    assert openai_shape["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "order", "schema": SCHEMA, "strict": True, "description": "One order"}}
    assert openai_shape["stream"] is True
    cloudflare_shape = call.inputs_for(LLAMA)
    assert cloudflare_shape["response_format"] == {"type": "json_schema", "json_schema": SCHEMA}
    assert cloudflare_shape["stream"] is False
    assert "response_format" not in call.inputs_for(MISTRAL), "a model that takes none is sent none"
    assert ModelCall.from_order(call.as_order()) == call, "a resumable answer's Durable Object gets it whole"


def test_json_object_is_asked_as_json_object_of_every_model():
    turn = validate_chat({"messages": USER, "response_format": {"type": "json_object"}}, CONFIG)
    call = model_call(turn, CONFIG, request_id="r", route="chat", client=None)
    assert call.inputs_for(GLM)["response_format"] == call.inputs_for(LLAMA)["response_format"] == {"type": "json_object"}


def test_an_unlisted_model_is_assumed_to_take_the_openai_shape():
    assert catalog.can("@cf/someone/new", "json_schema") and catalog.json_mode("@cf/someone/new") == catalog.OPENAI_JSON
    assert not catalog.can(MISTRAL, "json_object") and catalog.can(LLAMA, "json_object")


def test_integers_past_what_js_holds_exactly_are_sent_as_floats():
    # zod's z.int() writes these bounds; as ints Pyodide would make them BigInts, which the
    # binding's JSON.stringify refuses.
    bounded = {**SCHEMA, "properties": {"id": {"type": "integer", "minimum": -(2**53 - 1), "maximum": 2**53 - 1, "multipleOf": 3}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "n", "schema": bounded, "strict": True}}
    turn = validate_chat({"messages": USER, "response_format": fmt}, CONFIG)
    sent = model_call(turn, CONFIG, request_id="r", route="chat", client=None).inputs_for(GLM)["response_format"]["json_schema"]["schema"]
    limits = sent["properties"]["id"]
    assert (limits["minimum"], limits["maximum"], limits["multipleOf"]) == (-(2.0**53 - 1), 2.0**53 - 1, 3)
    assert isinstance(limits["maximum"], float) and isinstance(limits["multipleOf"], int)
