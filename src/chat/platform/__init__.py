"""The Python-JS boundary. `ffi` is the toolkit every module that touches JS uses (object
conversion, proxies that are always destroyed, keep-alive, JSON responses); `edge` turns
workerd's request, env and ctx into plain values and plain replies into a js.Response.
Only modules listed in pyproject.toml's ruff rule may import `js` or `pyodide`."""
