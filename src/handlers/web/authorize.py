"""The OAuth 2.0 endpoints: authorization (with its consent page), token, revocation, and the
server's metadata (RFC 8414).

The authorization endpoint checks the client and its redirect URI before anything else: a
request naming an unknown client or an unregistered redirect URI gets an error page and never a
redirect (an open redirect would hand an attacker a trusted link). Other errors go back to the
client's redirect URI, as RFC 6749 §4.1.2.1 says. The token and revocation endpoints answer
RFC 6749's and RFC 7009's JSON, which OAuth client libraries expect, not the API's error body."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

import anyio.to_thread
from authlib.common.urls import add_params_to_uri
from authlib.oauth2 import OAuth2Error
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from cardvault.domain.auth import credentials, oauth
from cardvault.domain.models import Account
from cardvault.handlers.http import runtime
from cardvault.handlers.web import pages
from cardvault.handlers.web.oauth_resources import asked_resource
from cardvault.handlers.web.oauth_server import Answer, Server
from cardvault.handlers.web.oauth_server import Request as OAuthRequest

# The authorization request's own parameters, carried through the consent form.
_AUTHORIZE_FIELDS = (
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
    "resource",
)
# Browser apps call these from their own origin; no cookie is involved, so any origin may.
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Max-Age": "600",
}


_MALFORMED = "This request holds characters OAuth does not allow (RFC 6749: printable ASCII only)."
# An error page says what went wrong in our words only: never a value of the request (an
# attacker's redirect_uri such as "https://x.example/ Account locked, call 555" would be shown
# on our page, under our name).
_UNKNOWN_CLIENT = "The app that sent you here is not registered with Card Vault. Go back to the app."
_WRONG_REDIRECT = (
    "The app sent you here with a return address it has not registered. Go back to the app and start again."
)
_INCOMPLETE = "The app's sign-in request is incomplete or not one Card Vault accepts. Go back to the app."


def _is_printable_ascii(pairs: list[tuple[str, str]]) -> bool:
    """Whether every value is of RFC 6749's characters (%x20-7E): anything else never reaches
    Authlib (whose errors cannot carry it) or the database (NUL)."""
    return all(value.isascii() and value.isprintable() for _, value in pairs)


def _oauth_request(request: Request, form: list[tuple[str, str]], *, query: bool = True) -> OAuthRequest:
    public = runtime.current().settings.public_url
    uri = public + request.url.path + (f"?{request.url.query}" if query and request.url.query else "")
    pairs = list(request.query_params.multi_items()) if query else []
    return OAuthRequest(request.method, uri, request.headers, pairs, form)


def _with_server(work: Callable[[Server], Any], *, write: bool = True) -> Any:
    """Run the server in one transaction (retried whole if the database was busy); what it
    wrote stands even when it answers an error (a replayed code or refresh token revokes).
    ``write=False`` for a request that can only read (SQLite's one write lock is not taken)."""
    rt = runtime.current()

    def attempt() -> Any:
        with rt.db.transaction(write=write) as session:
            return work(Server(session, issuer=rt.settings.public_url))

    return rt.db.run(attempt)


def _error_page(status: int, message: str) -> Response:
    return pages.render(
        "message.html",
        status,
        title="This sign-in link does not work",
        message=message,
        alert=True,
        link=None,
        link_text="",
        signed_in_as=None,
    )


def _as_response(answer: Answer) -> Response:
    if answer.location:
        return RedirectResponse(answer.location, status_code=302, headers={"Cache-Control": "no-store"})
    return JSONResponse(answer.body, status_code=answer.status, headers=answer.headers)


def _answer(response: object) -> Answer:
    """What the server answered: Server.handle_response makes every answer (Authlib's stubs
    call it an object, or the tuple handle_response is given)."""
    assert isinstance(response, Answer)
    return response


def _checked(server: Server, oauth_request: OAuthRequest, account_id: str) -> Any:
    """The authorization request's grant, or what to answer instead: the error sent back to
    the client (an Answer, with ``iss`` as RFC 9207 asks of error responses too), or, when the
    client or its redirect URI is wrong, the message of an error page (a str)."""
    try:
        # The stub leaves get_consent_grant unannotated.
        grant = server.get_consent_grant(oauth_request, end_user=account_id)  # type: ignore[no-untyped-call]
        asked_resource(oauth_request, server.issuer)  # RFC 8707: one of ours, or none
        return grant
    except OAuth2Error as error:
        if error.redirect_uri:
            answer = _answer(server.handle_error_response(oauth_request, error))
            if answer.location:
                answer.location = add_params_to_uri(answer.location, {"iss": server.issuer})
            return answer
        return _page_message(error)
    except ValueError:  # Authlib cannot describe a value it was sent (a quote, a backslash)
        return _MALFORMED


def _page_message(error: OAuth2Error) -> str:
    """The fixed message of an error page for an error that cannot go back to the client."""
    if error.error == "invalid_client":
        return _UNKNOWN_CLIENT
    if (error.description or "").startswith(("Redirect URI", "Missing 'redirect_uri'")):
        return _WRONG_REDIRECT
    return _INCOMPLETE


def _consent(request: Request, account_id: str) -> tuple[dict[str, Any] | None, Answer | None, str | None]:
    """Check the authorization request: the page's values, or the answer to send back to the
    client, or the message of an error page."""
    oauth_request = _oauth_request(request, [])

    def work(server: Server) -> Any:
        grant = _checked(server, oauth_request, account_id)
        if isinstance(grant, (Answer, str)):
            return grant
        client = grant.client.row
        account = server.session.get(Account, account_id)
        return {
            "client_name": client.name,
            "signed_in_as": account.name if account else "",
            "scopes": [
                (s, credentials.SCOPES[s])
                for s in grant.client.get_allowed_scope(oauth_request.payload.scope).split()
            ],
            "for_agents": oauth_request.payload.data.get("resource") == f"{server.issuer}/mcp",
            "self_registered": client.registered_dynamically,
            "redirect_host": urlsplit(oauth_request.payload.redirect_uri).hostname
            or oauth_request.payload.redirect_uri,
            "redirect_uri": oauth_request.payload.redirect_uri,
            "fields": [
                (name, value)
                for name, value in oauth_request.payload.data.items()
                if name in _AUTHORIZE_FIELDS
            ],
        }

    result = _with_server(work, write=False)  # a consent page only reads
    if isinstance(result, Answer):
        return None, result, None
    if isinstance(result, str):
        return None, None, result
    return result, None, None


async def authorize_page(request: Request) -> Response:
    """GET /oauth/authorize: check the request, send a signed-out browser to sign in, and
    show the consent page."""
    if not _is_printable_ascii(list(request.query_params.multi_items())):
        return _error_page(400, _MALFORMED)
    account_id = await pages.signed_in_account(request)
    # Checked first with no account: a broken request is answered before anyone signs in.
    page, answer, problem = await anyio.to_thread.run_sync(_consent, request, account_id or "")
    if problem is not None:
        return _error_page(400, problem)
    if answer is not None:
        return _as_response(answer)
    if account_id is None:
        next_path = request.url.path + "?" + request.url.query
        return pages.redirect("/sign-in?" + urlencode({"next": next_path}))
    assert page is not None
    csrf, fresh = pages.csrf_token(request)
    return pages.with_csrf_cookie(
        pages.render(
            "consent.html",
            title=f"Allow {page['client_name']}?",
            csrf=csrf,
            form_target=page["redirect_uri"],
            **page,
        ),
        fresh,
    )


async def authorize(request: Request) -> Response:
    """POST /oauth/authorize: the consent form's answer."""
    try:
        form = await pages.read_form(request)
    except pages.FormRefused as refused:
        return _error_page(400, str(refused))
    account_id = await pages.signed_in_account(request)
    if not pages.is_csrf_valid(request, form):
        return _error_page(
            403, "This form expired or came from another site. Go back to the app and start again."
        )
    if account_id is None:
        return _error_page(403, "You were signed out. Go back to the app and start again.")
    fields = [(name, value) for name, value in form if name in _AUTHORIZE_FIELDS]
    if not _is_printable_ascii(fields):
        return _error_page(400, _MALFORMED)
    allowed = pages.first(form, "decision") == "allow"

    def work(server: Server) -> Any:
        oauth_request = _oauth_request(request, fields, query=False)
        grant = _checked(server, oauth_request, account_id)
        if isinstance(grant, (Answer, str)):
            return grant
        try:
            return server.create_authorization_response(
                oauth_request, grant_user=account_id if allowed else None, grant=grant
            )
        except ValueError:
            return _MALFORMED

    result = await anyio.to_thread.run_sync(_with_server, work)
    if isinstance(result, str):
        return _error_page(400, result)
    return _as_response(result)


def _is_known(value: str | None) -> bool:
    """Whether the code or token a request names is kept; one that is not cannot be spent,
    replayed or revoked, so its request is run without a write (or SQLite's write lock)."""
    if not value:
        return False
    with runtime.current().db.transaction(write=False) as session:
        return oauth.is_known(session, value=value)


async def _form_endpoint(
    request: Request,
    respond: Callable[[Server, OAuthRequest], Answer],
    credential: Callable[[list[tuple[str, str]]], str | None],
) -> tuple[Response, bool]:
    """Answer a JSON endpoint taking a form (token, revocation), and say whether it could have
    written: only a request naming a kept code or token (``credential`` finds it in the form)."""
    if request.method == "OPTIONS":
        return Response(status_code=204, headers=_CORS), False
    try:
        form = await pages.read_form(request)
    except pages.FormRefused as refused:
        return _json_error("invalid_request", str(refused)), False
    authorization = request.headers.get("authorization", "")
    if not _is_printable_ascii([*form, ("authorization", authorization)]):
        return _json_error("invalid_request", _MALFORMED), False

    def work(server: Server) -> Answer:
        try:
            return respond(server, _oauth_request(request, form, query=False))
        except ValueError:  # Authlib reading a Basic header that is not base64 of UTF-8
            return Answer(401, {"error": "invalid_client", "error_description": _MALFORMED}, {})

    known = await anyio.to_thread.run_sync(_is_known, credential(form))
    answer = await anyio.to_thread.run_sync(functools.partial(_with_server, work, write=known))
    headers = {**answer.headers, **_CORS, "Cache-Control": "no-store", "Pragma": "no-cache"}
    return JSONResponse(answer.body, status_code=answer.status, headers=headers), known


_SPENT_BY_GRANT_TYPE = {"authorization_code": "code", "refresh_token": "refresh_token"}


def _spent(form: list[tuple[str, str]]) -> str | None:
    """The code or refresh token a token request would spend."""
    field = _SPENT_BY_GRANT_TYPE.get(pages.first(form, "grant_type") or "")
    return pages.first(form, field) if field else None


async def token(request: Request) -> Response:
    """POST /oauth/token (RFC 6749 §3.2): codes and refresh tokens for tokens."""
    response, known = await _form_endpoint(
        request, lambda server, asked: _answer(server.create_token_response(asked)), _spent
    )
    if known and response.status_code >= 400:
        # A refusal may have revoked a grant (a replayed code or refresh token): this process
        # forgets the grant credentials it had verified; each is looked up again on its next use.
        runtime.current().credential_cache.forget_granted()
    return response


async def revoke(request: Request) -> Response:
    """POST /oauth/revoke (RFC 7009): a refresh token ends its whole grant, an access token
    ends alone; an unknown token is answered 200 all the same."""
    response, known = await _form_endpoint(
        request,
        # The stub leaves create_endpoint_response unannotated.
        lambda server, asked: _answer(
            server.create_endpoint_response("revocation", asked)  # type: ignore[no-untyped-call]
        ),
        lambda form: pages.first(form, "token"),
    )
    if known:  # at once in this process (other processes within the credential cache's 5 s)
        runtime.current().credential_cache.forget_granted()
    return response


def _json_error(error: str, description: str) -> Response:
    return JSONResponse(
        {"error": error, "error_description": description},
        status_code=400,
        headers={"Cache-Control": "no-store", **_CORS},
    )


def metadata_document(public_url: str) -> dict[str, Any]:
    """The authorization server's metadata (RFC 8414)."""
    return {
        "issuer": public_url,
        "authorization_endpoint": f"{public_url}/oauth/authorize",
        "token_endpoint": f"{public_url}/oauth/token",
        "revocation_endpoint": f"{public_url}/oauth/revoke",
        "registration_endpoint": f"{public_url}/oauth/register",
        "scopes_supported": list(credentials.SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "authorization_response_iss_parameter_supported": True,
        "service_documentation": f"{public_url}/v1/ui/",
    }


async def metadata(request: Request) -> Response:
    """GET /.well-known/oauth-authorization-server."""
    document = metadata_document(runtime.current().settings.public_url)
    return JSONResponse(
        document, headers={"Cache-Control": "public, max-age=3600", "Access-Control-Allow-Origin": "*"}
    )
