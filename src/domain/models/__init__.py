"""ORM models, one module per feature; every model is imported here so Base.metadata has them all.

Times are integer milliseconds since the epoch, as the API shows them. Alembic's environment
(``migrations/env.py``) reads ``Base.metadata`` from this package: a new model module is imported here."""

from cardvault.domain.models.annotations import Annotation
from cardvault.domain.models.auth import (
    Account,
    ApiKey,
    OAuthClient,
    OAuthCode,
    OAuthGrant,
    OAuthToken,
    SignInLink,
    WebSession,
)
from cardvault.domain.models.cards import Card, CardTag
from cardvault.domain.models.changes import Change, ChangeCounter
from cardvault.domain.models.declarative import Base
from cardvault.domain.models.files import DoomedObject, Upload
from cardvault.domain.models.folders import Folder, FolderCard
from cardvault.domain.models.guards import IdempotencyKey
from cardvault.domain.models.ownership import add_alone, get_owned, refuse_while_active
from cardvault.domain.models.pipeline import CardStage, ImportTurn
from cardvault.domain.models.portability import ExportItem, ExportJob, ImportJob
from cardvault.domain.models.search import SearchWord
from cardvault.domain.models.shares import Share
from cardvault.domain.models.subscriptions import Subscription
from cardvault.domain.models.tags import TagCounter, TagOperation, TagSpelling
from cardvault.domain.models.webhooks import Webhook, WebhookDelivery

__all__ = [
    "Account",
    "Annotation",
    "ApiKey",
    "Base",
    "Card",
    "CardStage",
    "CardTag",
    "Change",
    "ChangeCounter",
    "DoomedObject",
    "ExportItem",
    "ExportJob",
    "Folder",
    "FolderCard",
    "IdempotencyKey",
    "ImportJob",
    "ImportTurn",
    "OAuthClient",
    "OAuthCode",
    "OAuthGrant",
    "OAuthToken",
    "SearchWord",
    "Share",
    "SignInLink",
    "Subscription",
    "TagCounter",
    "TagOperation",
    "TagSpelling",
    "Upload",
    "WebSession",
    "Webhook",
    "WebhookDelivery",
    "add_alone",
    "get_owned",
    "refuse_while_active",
]
