"""RFC 8707 resource indicators at the authorization server: what a token may be asked for
(the whole server, its API, its MCP endpoint), and the ``resource`` a request names."""

from __future__ import annotations

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import OAuth2Request


def resources(issuer: str) -> tuple[str, ...]:
    """What a token may be asked for (RFC 8707): the whole server, its API, its MCP endpoint."""
    return (issuer, f"{issuer}/v1", mcp_resource(issuer))


def mcp_resource(issuer: str) -> str:
    """The one of ``resources`` that is the MCP endpoint."""
    return f"{issuer}/mcp"


class InvalidTarget(OAuth2Error):
    """RFC 8707 §2: a resource this server does not serve, or another than the grant's."""

    error = "invalid_target"


def asked_resource(request: OAuth2Request, issuer: str) -> str | None:
    """The resource a request names (None: none); InvalidTarget for one not ours, or two."""
    named = request.payload.datalist.get("resource") or [] if request.payload else []
    if not named:
        return None
    if len(named) > 1 or named[0] not in resources(issuer):
        raise InvalidTarget(
            f"resource must be one of: {', '.join(resources(issuer))}.",
            state=request.payload.state if request.payload else None,
            redirect_uri=request.payload.redirect_uri if request.payload else None,
        )
    return str(named[0])
