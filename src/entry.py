"""The chat Worker (foundation stage): health check and a plain pass-through of Workers AI."""

import json
from urllib.parse import urlparse

import js
from pyodide.ffi import to_js
from workers import Response, WorkerEntrypoint


class Default(WorkerEntrypoint):
    async def fetch(self, request):
        path = urlparse(request.url).path
        if path == "/health":
            return Response.json({"status": "ok"})
        if path == "/api/chat/raw" and request.method == "POST":
            body = json.loads(await request.text())
            inputs = {"messages": body["messages"], "stream": True}
            stream = await self.env.AI.run(self.env.MODEL, to_js(inputs, dict_converter=js.Object.fromEntries))
            return Response(stream, headers={"content-type": "text/event-stream"})
        return Response.json({"error": {"code": "not_found", "message": "no such route"}}, status=404)
