"""The pages' and OAuth endpoints' routes, served before the API's stack."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Match, Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from cardvault.handlers.http.errors import error_response
from cardvault.handlers.web import agents, authorize, card_page, pages, share_feeds, share_page, sign_in


async def _stylesheet(request: Request) -> Response:
    return FileResponse(
        pages.STATIC / "cardvault.css",
        media_type="text/css",
        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"},
    )


ROUTES = [
    Route("/sign-in", sign_in.sign_in_page, methods=["GET"]),
    Route("/sign-in", sign_in.sign_in, methods=["POST"]),
    Route("/sign-out", sign_in.sign_out, methods=["POST"]),
    Route("/sign-in/link", sign_in.sign_in_link_page, methods=["GET"]),
    Route("/sign-in/link", sign_in.sign_in_link, methods=["POST"]),
    Route("/oauth/authorize", authorize.authorize_page, methods=["GET"]),
    Route("/oauth/authorize", authorize.authorize, methods=["POST"]),
    Route("/oauth/token", authorize.token, methods=["POST", "OPTIONS"]),
    Route("/oauth/revoke", authorize.revoke, methods=["POST", "OPTIONS"]),
    Route("/.well-known/oauth-authorization-server", authorize.metadata, methods=["GET"]),
    # Agent clients (MCP): the protected resource's metadata and dynamic client registration.
    Route("/.well-known/oauth-protected-resource", agents.protected_resource, methods=["GET", "OPTIONS"]),
    Route("/.well-known/oauth-protected-resource/mcp", agents.protected_resource, methods=["GET", "OPTIONS"]),
    Route("/oauth/register", agents.register, methods=["POST", "OPTIONS"]),
    Route("/cards/{card_id}", card_page.card_page, methods=["GET"]),
    Route("/static/cardvault.css", _stylesheet, methods=["GET"]),
    # A share's link (cardvault.handlers.web.share_page): no credentials, the token in the path.
    Route("/s/{token}", share_page.share_page, methods=["GET"]),
    Route("/s/{token}/feed.atom", share_feeds.atom_feed, methods=["GET"]),
    Route("/s/{token}/feed.json", share_feeds.json_feed, methods=["GET"]),
    Route("/s/{token}/cards/{card_id}/picture", share_page.share_media, methods=["GET"]),
    Route("/s/{token}/cards/{card_id}/file", share_page.share_media, methods=["GET"]),
]


class WebRoutes:
    """Serve the pages and OAuth endpoints; pass every other request on to the API."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.router = Router(routes=ROUTES)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        matches = [route.matches(scope)[0] for route in ROUTES]
        if Match.FULL in matches:
            await self.router(scope, receive, send)
            return
        if Match.PARTIAL in matches:  # the path is ours, the method is not
            allowed = sorted(
                {m for r in ROUTES if r.matches(scope)[0] != Match.NONE for m in r.methods or ()}
            )
            failed = error_response(
                (scope.get("state") or {}).get("request_id"),
                405,
                "METHOD_NOT_ALLOWED",
                f"{scope['method']} is not allowed on this path.",
                details={"allowed": allowed},
                headers={"Allow": ", ".join(allowed)},
            )
            response = Response(
                failed.body, status_code=405, media_type="application/json", headers=failed.headers
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
