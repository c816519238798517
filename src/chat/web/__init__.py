"""HTTP on plain values: the request and reply (exchange), the route table and everything
decided before a handler runs (routes), CORS and content negotiation (http), and the error
table's bodies (errors). Pure Python, unit-tested on CPython."""
