"""The app factory's older path, which deployments were given, still names the factory."""

import importlib

from cardvault.handlers.http import app


def test_the_factory_path_deployments_were_given_names_the_same_factory() -> None:
    older = importlib.import_module("cardvault.handlers.app")
    assert older.app_from_env is app.app_from_env
    assert older.create_app is app.create_app
