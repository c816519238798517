"""Asks the Worker for an order through instructor (its JSON_SCHEMA mode and its default,
TOOLS), in .venv-instructor (the Makefile: instructor cannot share .venv's openai). Prints
what instructor gave back as JSON; a failure is an exception, and a non-zero exit."""

from __future__ import annotations

import json
import sys

import instructor
from openai import OpenAI
from order import Order  # beside this script, on its path as the script's own folder


def main(url: str, model: str) -> None:
    results = {}
    for mode in (instructor.Mode.JSON_SCHEMA, instructor.Mode.TOOLS):
        client = instructor.from_openai(OpenAI(base_url=url + "/v1", api_key="any", max_retries=0), mode=mode)
        order = client.chat.completions.create(model=model, response_model=Order, max_retries=0,
                                               messages=[{"role": "user", "content": "An order, please."}])
        results[mode.value] = order.model_dump()
    print(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:])
