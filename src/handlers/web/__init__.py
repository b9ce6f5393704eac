"""The server-rendered side of the service, beside the /v1 API: the sign-in and consent pages,
the OAuth 2.0 authorization server's endpoints, and the card page each card's ``appUrl`` opens.

These are not API operations. They answer HTML (or, at the OAuth endpoints, the JSON of RFC 6749
and RFC 7009), read the browser session cookie (which the API never does), and sit before the
API's request guard, which takes only JSON bodies."""
