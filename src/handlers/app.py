"""The app factory at the path deployments were given before the HTTP glue moved to
cardvault.handlers.http (``uvicorn --factory cardvault.handlers.app:app_from_env``): kept so
that they still start. New deployments name cardvault.handlers.http.app."""

from cardvault.handlers.http.app import app_from_env, create_app

__all__ = ["app_from_env", "create_app"]
