"""The chat Worker's own logic, one package per concern (the byte-level stream core is
the `sse` package beside this one):

- `app`: `handle`, the Worker's fetch: admit, spend budget, dispatch to a handler.
- `web`: the route table, the request and reply as plain values, CORS, error bodies.
- `api`: what each API surface accepts (chat, UI chat, OpenAI-compatible, tools).
- `model`: the model catalog, the AI.run input, what the binding's errors mean.
- `stream`: one answer's stream: upstream start, lifecycle rules, the relay.
- `resumable`: answers kept by a Durable Object and replayed to any reader.
- `ratelimit`: whose budget a request spends, and the binding call.
- `platform`: the FFI toolkit and the edge (workerd's request, env and ctx).
- `config`, `logs`: the [vars] read once per request, and JSON log lines.

Pure modules run on CPython in unit tests and are typed strictly; only the modules that
pyproject.toml's ruff rule lists may import `js`, `pyodide` or `workers`.
"""
