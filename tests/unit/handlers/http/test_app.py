"""The app create_app builds: what it answers itself, beside the operations."""

from starlette.testclient import TestClient

from tests.unit.handlers.test_cards import assert_error


# A defect found in review, pinned by the behaviour that was wrong.
def test_wrong_methods_on_the_spec_and_docs_say_what_is_allowed(app_client: TestClient) -> None:
    response = app_client.post("/v1/openapi.json")
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert "GET" in response.headers["allow"]
