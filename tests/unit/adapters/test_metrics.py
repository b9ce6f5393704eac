"""The metric families' exposition: one process shows its own values; with
PROMETHEUS_MULTIPROC_DIR set (as ``cardvault serve --workers N`` sets it) every process writes
its values there and any of them shows the sum."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cardvault.adapters import metrics


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
    }


def test_one_process_shows_its_own_values() -> None:
    assert not metrics.multiprocess()
    key = ("cardvault_rate_limited_total", (("policy", "test-own"),))
    before = _samples(metrics.exposition()).get(key, 0.0)
    metrics.RATE_LIMITED.labels("test-own").inc()
    assert _samples(metrics.exposition())[key] == before + 1


def test_several_processes_writing_to_one_folder_are_summed(tmp_path: Path) -> None:
    env = {**os.environ, metrics.MULTIPROCESS_DIR: str(tmp_path)}
    count = "from cardvault.adapters import metrics; metrics.HTTP_REQUESTS.labels('listCards', '200').inc({})"
    for n in (2, 3):
        subprocess.run([sys.executable, "-c", count.format(n)], env=env, check=True)
    show = "import sys; from cardvault.adapters import metrics; sys.stdout.buffer.write(metrics.exposition())"
    shown = subprocess.run([sys.executable, "-c", show], env=env, check=True, capture_output=True).stdout
    samples = _samples(shown)
    assert samples[("cardvault_http_requests_total", (("operation", "listCards"), ("status", "200")))] == 5


def test_a_stage_is_timed_when_it_raises_too() -> None:
    key = ("cardvault_pipeline_stage_duration_seconds_count", (("stage", "test-raises"),))
    before = _samples(metrics.exposition()).get(key, 0.0)
    with pytest.raises(RuntimeError), metrics.stage_timer("test-raises"):
        raise RuntimeError("the stage broke")
    assert _samples(metrics.exposition())[key] == before + 1


def test_the_grafana_dashboard_names_only_families_that_exist() -> None:
    """deploy/grafana/cardvault.json: every metric its queries name is one we expose."""
    import json
    import re

    from prometheus_client import REGISTRY

    dashboard = json.loads((Path(__file__).parents[3] / "deploy" / "grafana" / "cardvault.json").read_text())
    named = {
        re.sub(r"_(bucket|count|sum)$", "", name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"cardvault_[a-z_]+", target["expr"])
    }
    exposed = {family.name for family in REGISTRY.collect() if family.name.startswith("cardvault_")}
    exposed |= {family.name for family in metrics.Queues(list).collect()}
    exposed |= {f"{name}_total" for name in exposed}  # a counter's family is named without _total
    assert named and named <= exposed, named - exposed
    assert len(dashboard["panels"]) == len({panel["id"] for panel in dashboard["panels"]})


def test_a_workers_metrics_are_answered_on_a_port_of_their_own_by_one_process() -> None:
    import httpx

    from harness.servers import free_port

    port = free_port()
    server = metrics.serve("127.0.0.1", port, metrics.Queues(list))
    assert server is not None
    try:
        assert metrics.serve("127.0.0.1", port) is None  # another process of the worker holds it
        answer = httpx.get(f"http://127.0.0.1:{port}/metrics")
        assert answer.status_code == 200 and answer.headers["content-type"] == metrics.CONTENT_TYPE
        assert "cardvault_worker_messages_total" in answer.text or "cardvault_queue_messages" in answer.text
        assert httpx.get(f"http://127.0.0.1:{port}/other").status_code == 404
    finally:
        server.shutdown()
        server.server_close()


def test_a_workers_port_with_the_metrics_token_answers_only_with_it() -> None:
    import httpx

    from harness.servers import free_port

    port, token = free_port(), "metrics-token-0123456789"
    server = metrics.serve("127.0.0.1", port, token=token)
    assert server is not None
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        for sent in (
            {},
            {"Authorization": "Bearer wrong-token-0123456789"},
            {"Authorization": f"Basic {token}"},
        ):
            refused = httpx.get(url, headers=sent)
            assert (
                refused.status_code == 401 and refused.headers["www-authenticate"] == 'Bearer realm="metrics"'
            )
            assert refused.json() == {
                "code": "UNAUTHENTICATED",
                "error": "The metrics need the bearer token set in CARDVAULT_METRICS_TOKEN.",
                "details": None,
                "requestId": None,
                "retryAt": None,
            }
            assert "cardvault_" not in refused.text
        answer = httpx.get(url, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200 and "cardvault_" in answer.text
    finally:
        server.shutdown()
        server.server_close()
