"""Authlib's framework-independent OAuth 2.0 authorization server, fitted to our records.

Authlib has no Starlette server integration, so this module gives it what its Flask one does:
requests built from form pairs (repeats kept, so its "parameter given twice" checks work), a
response object, client and code wrappers. A server is built per request around that request's
database session (the records are read and written in the request's one transaction).

Tightened against Authlib's defaults:
- PKCE is required for every client and only S256 is accepted. Authlib's ``CodeChallenge(
  required=True)`` lets an authorization request without ``code_challenge`` through and
  defaults a missing method to ``plain``.
- The redirect URI must be sent and match a registered one exactly (no default URI).
- Refresh tokens rotate (Authlib's default is not to issue a new one), and the spend of a code
  or a refresh token happens in one conditional UPDATE while it is being checked, not after the
  new tokens are saved, so concurrent uses get exactly one success (see domain/auth/oauth.py).
- Authorization responses carry ``iss`` (RFC 9207).
- A request may name the resource its tokens are for (RFC 8707 ``resource``, once): this
  server's API or its MCP endpoint; the grant keeps it, and /mcp takes only tokens issued for
  it (cardvault.handlers.http.mcp_endpoint)."""

from __future__ import annotations

import dataclasses
import hmac
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import (
    AuthorizationCodeMixin,
    ClientMixin,
    OAuth2Payload,
    OAuth2Request,
    TokenMixin,
)
from authlib.oauth2.rfc6749.errors import InvalidRequestError
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant, RefreshTokenGrant
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9207 import IssuerParameter
from sqlalchemy.orm import Session

from cardvault.domain.auth import credentials, oauth
from cardvault.domain.clock import now_ms
from cardvault.domain.models import OAuthClient, OAuthCode, OAuthGrant
from cardvault.handlers.web.oauth_resources import InvalidTarget, asked_resource, mcp_resource

CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]


class _Payload(OAuth2Payload):
    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._data: dict[str, str] = {}
        self._datalist: defaultdict[str, list[str]] = defaultdict(list)
        for name, value in pairs:
            self._data.setdefault(name, value)
            self._datalist[name].append(value)

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> defaultdict[str, list[str]]:
        return self._datalist


class Request(OAuth2Request):
    """An OAuth request: its URI (built on the public URL, never the Host header), headers, and
    the query and form pairs as read."""

    payload: _Payload  # always ours (Authlib's attribute may be None)

    def __init__(
        self,
        method: str,
        uri: str,
        headers: Mapping[str, str],
        query: list[tuple[str, str]],
        form: list[tuple[str, str]],
    ) -> None:
        super().__init__(method=method, uri=uri, headers=headers)
        self._args: dict[str, str | None] = dict(reversed(query))  # the first value wins, as in the payload
        self._form = dict(reversed(form))
        self.payload = _Payload(query + form)

    @property
    def args(self) -> dict[str, str | None]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


@dataclasses.dataclass
class Answer:
    """What the server answers, before it becomes a Starlette response."""

    status: int
    body: Any
    headers: dict[str, str]

    @property
    def location(self) -> str | None:
        return self.headers.get("Location")

    @location.setter
    def location(self, value: str) -> None:  # RFC 9207's extension rewrites it
        self.headers["Location"] = value


class Client(ClientMixin):
    def __init__(self, row: OAuthClient) -> None:
        self.row = row
        self.client_id = row.id

    def get_client_id(self) -> str:
        return self.row.id

    # Authlib reads a false value as "no default" (its stub says str).
    def get_default_redirect_uri(self) -> None:  # type: ignore[override]
        return None  # the request must name its redirect URI

    # Authlib passes the request's scope string, or None (its stub says Collection[str] | str).
    def get_allowed_scope(self, scope: str | None) -> str:  # type: ignore[override]
        allowed = set(self.row.scopes.split())
        if not scope:
            return self.row.scopes  # no scope asked: what the client is registered for
        return " ".join(s for s in credentials.scope_list(scope) if s in allowed)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.row.redirect_uris  # exact: no prefix, no port or path freedom

    def check_client_secret(self, client_secret: str) -> bool:
        return self.row.secret_hash is not None and hmac.compare_digest(
            credentials.digest(client_secret), self.row.secret_hash
        )

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        if self.row.secret_hash is None:
            return bool(method == "none")
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in ("authorization_code", "refresh_token")


def _our_client(client: ClientMixin | None) -> Client:
    """The request's client: Authlib has found it through Server.query_client before any hook
    that reads it runs."""
    assert isinstance(client, Client)
    return client


class _Code(AuthorizationCodeMixin):
    code_challenge_method = "S256"

    def __init__(self, row: OAuthCode) -> None:
        self.row = row
        self.code_challenge = row.code_challenge

    def get_redirect_uri(self) -> str:
        return self.row.redirect_uri

    def get_scope(self) -> str:
        return self.row.scopes


class _RefreshCredential(TokenMixin):
    def __init__(self, grant: OAuthGrant) -> None:
        self.grant = grant

    def check_client(self, client: Client) -> bool:
        return self.grant.client_id == client.row.id

    def get_scope(self) -> str:
        return self.grant.scopes

    def get_expires_in(self) -> int:
        return 0

    def is_expired(self) -> bool:
        return False  # spend_refresh_token returned it: it is live

    def is_revoked(self) -> bool:
        return False


class _Revocable(TokenMixin):
    def __init__(self, value: str) -> None:
        self.value = value

    def check_client(self, client: Client) -> bool:
        return True  # another client's token is left alone in revoke_token, answered the same


class _S256Only(CodeChallenge):
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]  # noqa: RUF012 - Authlib's own attribute
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError(
                "PKCE is required: send code_challenge with code_challenge_method=S256."
            )
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256 (plain is not accepted).")
        super().validate_code_challenge(grant, redirect_uri)


class _Issuer(IssuerParameter):
    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def get_issuer(self) -> str:
        return self.issuer


class Server(AuthorizationServer):
    """The authorization server over one request's database session."""

    def __init__(self, session: Session, issuer: str) -> None:
        super().__init__(scopes_supported=list(credentials.SCOPES))
        self.session = session
        self.issuer = issuer
        self.register_token_generator(
            "default",
            BearerTokenGenerator(
                access_token_generator=lambda **_: credentials.new_secret(credentials.ACCESS_TOKEN),
                refresh_token_generator=lambda **_: credentials.new_secret(credentials.REFRESH_TOKEN),
                expires_generator=lambda client, grant_type: oauth.ACCESS_TOKEN_SECONDS,
            ),
        )
        self.register_grant(_CodeGrant, [_S256Only(required=True)])
        self.register_grant(_RefreshGrant)
        self.register_endpoint(_Revocation)
        self.register_extension(_Issuer(issuer))

    # Authlib answers None as an unknown client (its stub leaves None out).
    def query_client(self, client_id: str) -> Client | None:  # type: ignore[override]
        row = oauth.find_client(self.session, client_id=client_id)
        return Client(row) if row else None

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        now = now_ms()
        if request.authorization_code is not None:
            code = request.authorization_code.row
            grant = oauth.start_grant(
                self.session,
                account_id=code.account_id,
                client_id=code.client_id,
                scopes=code.scopes,
                now=now,
                code=code,
            )
        else:
            # No code: the refresh grant, which set the credential it authenticated.
            assert isinstance(request.refresh_token, _RefreshCredential)
            grant = request.refresh_token.grant
        oauth.add_tokens(
            self.session,
            grant=grant,
            access_token=token["access_token"],
            refresh_token=token["refresh_token"],
            access_scopes=token.get("scope") or grant.scopes,
            now=now,
        )

    def create_oauth2_request(self, request: Request) -> Request:
        return request

    def create_json_request(self, request: Any) -> Any:
        raise NotImplementedError("no JSON endpoints")

    def handle_response(self, status: int, body: Any, headers: Any) -> Answer:
        return Answer(status=status, body=body, headers=dict(headers))

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass


class _CodeGrant(AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = CLIENT_AUTH_METHODS

    @property
    def _session(self) -> Session:
        return self.server.session  # type: ignore[no-any-return]

    def generate_authorization_code(self) -> str:
        return credentials.new_secret(credentials.AUTHORIZATION_CODE)

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        assert isinstance(request, Request)  # Server.create_oauth2_request passes ours through
        assert isinstance(request.user, str)  # the account that allowed it (grant_user)
        client = _our_client(request.client)
        oauth.save_code(
            self._session,
            code=code,
            client_id=client.row.id,
            account_id=request.user,
            redirect_uri=request.payload.redirect_uri,
            scopes=client.get_allowed_scope(request.payload.scope),
            code_challenge=request.payload.data["code_challenge"],
            now=now_ms(),
            resource=asked_resource(request, self.server.issuer),
        )

    def query_authorization_code(self, code: str, client: ClientMixin) -> _Code | None:
        client_id = _our_client(client).row.id
        row = oauth.spend_code(self._session, code=code, client_id=client_id, now=now_ms())
        return _Code(row) if row else None

    def validate_token_request(self) -> None:
        super().validate_token_request()
        # RFC 8707 at the token endpoint: the resource asked for then, if any, is the code's.
        assert isinstance(self.request.authorization_code, _Code)  # super() found it, or raised
        code = self.request.authorization_code.row
        asked = asked_resource(self.request, self.server.issuer)
        # A code asked for no resource is the API's: it may be spent for the API by name (the
        # grant then keeps that name, which its refreshes may send again), never widened to
        # /mcp, which the consent page did not name.
        if asked is not None and asked != code.resource:
            if code.resource is not None or asked == mcp_resource(self.server.issuer):
                raise InvalidTarget("resource must be the one the authorization request named.")
            code.resource = asked

    def delete_authorization_code(self, authorization_code: _Code) -> None:
        pass  # spent by query_authorization_code, in the same statement that found it

    def authenticate_user(self, authorization_code: _Code) -> str:
        return authorization_code.row.account_id


class _RefreshGrant(RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = CLIENT_AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    # Authlib answers None as an unknown token (its stub leaves None out).
    def authenticate_refresh_token(  # type: ignore[override]
        self, refresh_token: str
    ) -> _RefreshCredential | None:
        session, client_id = self.server.session, _our_client(self.request.client).row.id
        # A refused request changes nothing: the scope is checked before the token is spent
        # (Authlib checks it after), or the client's next, valid, refresh would look like reuse.
        grant = oauth.refresh_token_grant(session, token=refresh_token, client_id=client_id)
        if grant is None:
            return None
        asked = asked_resource(self.request, self.server.issuer)
        if asked is not None and asked != grant.resource:
            raise InvalidTarget("resource must be the one the grant was made for.")
        # Authlib's own check, private so left out of its stub.
        self._validate_token_scope(_RefreshCredential(grant))  # type: ignore[attr-defined]
        spent = oauth.spend_refresh_token(
            session, token=refresh_token, client_id=client_id, now=now_ms(), grant=grant
        )
        return _RefreshCredential(spent) if spent else None

    def authenticate_user(self, refresh_token: _RefreshCredential) -> str:
        return refresh_token.grant.account_id

    def revoke_old_credential(self, refresh_token: TokenMixin) -> None:
        pass  # spent by authenticate_refresh_token


class _Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = CLIENT_AUTH_METHODS

    def check_params(self, request: Request, client: Client) -> None:
        # RFC 7009 §2.1: "An invalid token type hint value is ignored" (Authlib refuses it,
        # answering 401 unsupported_token_type). The token's prefix says what it is anyway.
        if "token" not in request.form:
            raise InvalidRequestError("Missing 'token' in request.")

    def query_token(self, token_string: str, token_type_hint: str | None) -> _Revocable | None:
        is_ours = credentials.is_well_formed(
            token_string, credentials.ACCESS_TOKEN
        ) or credentials.is_well_formed(token_string, credentials.REFRESH_TOKEN)
        return _Revocable(token_string) if is_ours else None

    def revoke_token(self, token: _Revocable, request: Request) -> None:
        client_id = _our_client(request.client).row.id
        oauth.revoke_token(self.server.session, token=token.value, client_id=client_id, now=now_ms())
