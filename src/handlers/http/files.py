"""The local-disk blob store's URLs, served by the app itself (on S3 the store serves its own):

- ``PUT /files/upload/<token>``: an upload's bytes, streamed to disk as they arrive (never held
  in memory), exactly the size and type the token was signed for; answers 200 with the S3-shaped
  ``ETag`` the client sends back as ``fileEtag``. A second PUT to the same URL is refused.
- ``GET``/``HEAD /files/<token>``: a stored file, with ``Range``, as the type and disposition
  the token names, ``X-Content-Type-Options: nosniff`` always.

These are not API operations (the spec describes them only as the opaque URLs it hands out):
they sit before RequestGuard, which takes only JSON bodies, and answer errors with the same
error body as the API."""

from __future__ import annotations

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from cardvault.adapters.blobs import IMMUTABLE, content_disposition
from cardvault.adapters.blobs.local import LocalDiskStore, UploadRefused
from cardvault.handlers.http import runtime as runtime_module
from cardvault.handlers.http.errors import error_response

PREFIX = "/files/"
UPLOAD_PREFIX = "/files/upload/"


class FileRoutes:
    """Serve the local blob store's signed URLs; pass every other request on."""

    def __init__(self, app: ASGIApp, runtime: runtime_module.Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        store = self.runtime.store
        request = Request(scope, receive)
        upload = scope["path"].startswith(UPLOAD_PREFIX)
        allowed = ("PUT",) if upload else ("GET", "HEAD")
        try:
            if not isinstance(store, LocalDiskStore):
                raise UploadRefused(404, "NOT_FOUND", "No such resource.")
            if request.method not in allowed:
                raise UploadRefused(
                    405, "METHOD_NOT_ALLOWED", f"{request.method} is not allowed on this path."
                )
            response = await (self._upload(store, request) if upload else self._download(store, request))
        except UploadRefused as refused:
            response = _refusal(scope, refused, allowed)
        await response(scope, receive, send)

    async def _upload(self, store: LocalDiskStore, request: Request) -> Response:
        claims = store.upload_claims(request.url.path.removeprefix(UPLOAD_PREFIX))
        key, size, content_type = claims["k"], claims["n"], claims["t"]
        if request.headers.get("content-type", "") != content_type:
            raise UploadRefused(
                403,
                "URL_MISMATCH",
                f"This URL takes Content-Type {content_type}, as signed; send exactly that.",
            )
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) != size:
            status, code = (413, "FILE_TOO_LARGE") if int(declared) > size else (400, "INVALID_INPUT")
            raise UploadRefused(
                status, code, f"This URL takes exactly {size} bytes; Content-Length is {declared}."
            )
        stored = await store.receive(key, request.stream(), size=size, content_type=content_type)
        return Response(status_code=200, headers={"ETag": stored.etag})

    async def _download(self, store: LocalDiskStore, request: Request) -> Response:
        claims = store.download_claims(request.url.path.removeprefix(PREFIX))
        stored = await anyio.to_thread.run_sync(store.stat, claims["k"])
        if stored is None:
            raise UploadRefused(404, "NOT_FOUND", "No such file: it was deleted.")
        return FileResponse(
            store.open(claims["k"]),
            media_type=claims["t"],
            headers={
                "Content-Disposition": content_disposition(claims["f"], attachment=claims["a"]),
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": IMMUTABLE,
                "ETag": stored.etag,
                "Content-Security-Policy": "default-src 'none'; sandbox",
            },
        )


def _refusal(scope: Scope, refused: UploadRefused, allowed: tuple[str, ...]) -> Response:
    state = scope.get("state") or {}
    failed = error_response(
        state.get("request_id"),
        refused.status,
        refused.code,
        refused.message,
        details={"allowed": list(allowed)} if refused.status == 405 else None,
        headers={"Allow": ", ".join(allowed)} if refused.status == 405 else None,
    )
    return Response(
        failed.body, status_code=failed.status_code, media_type="application/json", headers=failed.headers
    )
