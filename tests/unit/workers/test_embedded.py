"""The embedded worker: started and stopped with the app, and waited for until it is idle."""

from __future__ import annotations

from cardvault.workers import embedded
from tests.conftest import Api


class TestWaitUntilIdle:
    def test_returns_once_the_work_a_request_started_is_done(self, api: Api) -> None:
        for n in range(20):
            api.create(content=f"card {n}", tags=["old"])
        started = api.post("/v1/tags/rename", json={"from": "old", "to": "new"}).json()
        embedded.wait_until_idle()
        # No polling: the operation, run batch by batch by the worker, has ended.
        operation = api.get(f"/v1/tags/operations/{started['operationId']}").json()
        assert (operation["status"], operation["changed"]) == ("completed", 20)

    def test_returns_at_once_when_no_embedded_worker_runs(self) -> None:
        embedded.wait_until_idle(timeout_seconds=0)
