"""Every actor module, imported once here: a process that runs workers imports this, and Dramatiq
then knows every actor (actors are declared when their module is imported)."""

from cardvault.workers import (  # noqa: F401  (declares the actors)
    changes,
    exports,
    files,
    idempotency,
    imports,
    oauth,
    pipeline,
    tags,
    trash,
    webhooks,
)
