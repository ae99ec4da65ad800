"""The request-size cap, as ASGI middleware: no upload larger than the limit is read, let alone stored."""

from __future__ import annotations

import json

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

FORM_OVERHEAD_BYTES = 64 * 1024  # multipart headers and the small fields around the file


class BodyCap:
    """ASGI middleware: no request body past the file limit (+ the form's overhead) is ever read.

    An announced Content-Length over the cap is refused before the body is read; a chunked body
    (no Content-Length) is counted as it arrives and refused, and the connection closed, once it
    passes the cap, so neither is spooled to disk nor parsed (tokens are checked after parsing).
    """

    def __init__(self, app: ASGIApp, max_file_bytes: int) -> None:
        self.app, self.max_file_bytes = app, max_file_bytes
        self.cap = max_file_bytes + FORM_OVERHEAD_BYTES

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length", "")
        if length.isdigit() and int(length) > self.cap:
            await self.refuse(send, f"{length} bytes", close=False)
        else:
            await self.counted(scope, receive, send)

    async def counted(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app on a receive that stops at the cap: past it, answer 413 here and tell the
        app the client left (what it answers then goes nowhere)."""
        state = {"read": 0, "started": False, "refused": False}

        async def capped_receive() -> Message:
            if state["refused"]:
                return {"type": "http.disconnect"}
            message = await receive()
            state["read"] += len(message.get("body", b""))
            if state["read"] > self.cap and not state["started"]:
                state["refused"] = True
                await self.refuse(send, f"over {self.cap} bytes (chunked)", close=True)
                return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            state["started"] = True
            if not state["refused"]:
                await send(message)

        try:
            await self.app(scope, capped_receive, guarded_send)
        except Exception:
            if not state["refused"]:
                raise

    async def refuse(self, send: Send, size: str, close: bool) -> None:
        """413 in the app's one-line form; closing stops uvicorn from reading (and discarding) the rest."""
        body = json.dumps({"error": f"request too large: {size}, the file limit is {self.max_file_bytes}"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   *([(b"connection", b"close")] if close else [])]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
