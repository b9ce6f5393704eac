"""The rate limits, by policy (the spec's ``x-cardvault-rate-limit``): each a moving window of
"N/period" set by CARDVAULT_RATE_LIMIT_<POLICY>, where ``off`` turns one off. Generous: they stop
abuse, not people."""

from __future__ import annotations

from cardvault.settings.declaring import Setting
from cardvault.settings.kinds import RATE


def _limit(policy: str, default: str, description: str) -> tuple[str, Setting[str | None]]:
    name = "CARDVAULT_RATE_LIMIT_" + policy.upper().replace("-", "_")
    return policy, Setting(name, RATE, default, description)


RATE_LIMIT_SETTINGS: dict[str, Setting[str | None]] = dict(
    [
        _limit("done", "60/minute", "`markCardDone` per account"),
        _limit("cards", "600/minute", "`createCard` per account"),
        _limit("folders", "60/minute", "`createFolder` per account"),
        _limit(
            "tag-operations", "30/minute", "`renameTag`, `mergeTag` and `deleteTag` together, per account"
        ),
        _limit(
            "uploads",
            "600/minute",
            "`createUpload`, `createCardThumbnailUpload` and `createCardCaptionsUpload` together, "
            "per account",
        ),
        _limit("image-changes", "20/minute", "`replaceCardThumbnail` per account"),
        _limit(
            "caption-changes",
            "20/minute",
            "`replaceCardCaptions` and `deleteCardCaptions` together, per account",
        ),
        _limit("refresh", "6/minute", "`refreshCard` per account (cards refreshed)"),
        _limit("refresh-card", "1/minute", "`refreshCard` per card (refreshes of one card)"),
        _limit(
            "export-starts",
            "10/day",
            "`startExport` per account (beside its rule of one ready export a week)",
        ),
        _limit("api-keys", "30/hour", "`createApiKey` per account (keys created over the API)"),
        _limit(
            "webhook-sends",
            "10/minute",
            "`testWebhook` and `retryWebhookDelivery` together, per account (pings and retries asked for)",
        ),
        # Sign-in attempts are counted per account (its email) and per client address before the
        # password is checked; when either is used up the sign-in page refuses to check any
        # password for it until the window moves.
        _limit(
            "sign-in-account", "10/15 minutes", "sign-in attempts per email, before the password is checked"
        ),
        _limit(
            "sign-in-address",
            "50/15 minutes",
            "sign-in attempts per client address, IPv6 by its /64 (the address the server sees: "
            "behind a proxy, the proxy's)",
        ),
        # A share's page, feeds, pictures and files are read without credentials: counted per
        # share (a link passed around widely) and per client address (one reader pulling hard).
        _limit("share", "600/minute", "reads of one share's page, feeds, pictures and files, per share"),
        _limit(
            "share-address",
            "300/minute",
            "reads of shares' pages, feeds, pictures and files per client address, IPv6 by its /64",
        ),
        # Agent clients register themselves (RFC 7591, /oauth/register) without credentials.
        _limit(
            "client-registrations",
            "20/hour",
            "OAuth client registrations (/oauth/register) per client address, IPv6 by its /64",
        ),
        _limit(
            "sign-in-all", "600/minute", "sign-in attempts of the whole service, from every address together"
        ),
    ]
)

# The policies' defaults (policy -> "N/period").
RATE_LIMITS: dict[str, str] = {
    policy: declared.default for policy, declared in RATE_LIMIT_SETTINGS.items() if declared.default
}
