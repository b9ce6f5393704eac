"""The HTTP edge as a client meets it over a socket: what the app answers (always the JSON
error body) and what the HTTP server refuses before the app sees the request."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.servers import redis_server, running_server, server_env
from tests.conftest import fresh_postgres_database

ERROR_KEYS = {"code", "error", "details", "requestId", "retryAt"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """`cardvault serve --port P` on the embedded default, CARDVAULT_PUBLIC_URL unset."""
    tmp_path = tmp_path_factory.mktemp("http-server")
    with running_server(server_env(tmp_path), tmp_path) as started:
        yield started


def raw_request(base: str, head: bytes, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are and read the whole answer (the server closes the connection)."""
    address = urlsplit(base)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(head + b"\r\n" + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head_part, _, payload = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head_part.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in header_lines)}
    return int(status_line.split()[1]), headers, payload


def get_head(path: str, key: str, *extra: str) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {key}", *extra]
    return ("\r\n".join(lines) + "\r\nConnection: close\r\n").encode()


def assert_json_error(status: int, headers: dict[str, str], payload: bytes, expected: int, code: str) -> None:
    assert status == expected, payload
    assert headers["content-type"] == "application/json"
    body = json.loads(payload)
    assert set(body) == ERROR_KEYS and body["code"] == code
    assert body["requestId"] == headers["x-request-id"]


def test_app_urls_name_the_port_served_when_no_public_url_is_set(server: tuple[str, str]) -> None:
    base, key = server
    response = httpx.post(f"{base}/cards", json={"content": "x"}, headers={"Authorization": f"Bearer {key}"})
    port = urlsplit(base).port
    assert response.json()["appUrl"].startswith(f"http://127.0.0.1:{port}/cards/")


def test_a_trailing_slash_is_a_json_404_never_a_redirect_built_from_host(server: tuple[str, str]) -> None:
    base, key = server
    head = get_head("/v1/cards/?limit=1", key).replace(b"Host: 127.0.0.1", b"Host: evil.example")
    status, headers, payload = raw_request(base, head)
    assert "location" not in headers
    assert_json_error(status, headers, payload, 404, "NOT_FOUND")


def test_headers_over_16_kib_get_431_with_the_error_body(server: tuple[str, str]) -> None:
    base, key = server
    status, headers, payload = raw_request(base, get_head("/v1/cards", key, "X-Pad: " + "a" * 20_000))
    assert_json_error(status, headers, payload, 431, "HEADERS_TOO_LARGE")


def test_a_32_mib_header_is_refused_by_the_http_server_before_it_is_buffered(
    server: tuple[str, str],
) -> None:
    base, key = server
    try:
        status, _, _ = raw_request(base, get_head("/v1/cards", key, "X-Pad: " + "a" * 32 * 1024 * 1024))
    except (ConnectionResetError, BrokenPipeError):
        return  # refused and closed while we were still sending
    assert status == 400


def test_an_unknown_method_reaches_the_app_and_gets_405(server: tuple[str, str]) -> None:
    base, key = server
    head = get_head("/v1/cards", key).replace(b"GET ", b"BREW ", 1)
    status, headers, payload = raw_request(base, head)
    assert_json_error(status, headers, payload, 405, "METHOD_NOT_ALLOWED")
    assert headers["allow"] == "GET, POST"


def test_a_100000_character_query_gets_the_json_400(server: tuple[str, str]) -> None:
    base, key = server
    status, headers, payload = raw_request(base, get_head("/v1/cards?q=" + "a" * 100_000, key))
    assert_json_error(status, headers, payload, 400, "INVALID_INPUT")


def test_two_authorization_headers_are_refused(server: tuple[str, str]) -> None:
    base, key = server
    status, headers, payload = raw_request(base, get_head("/v1/cards", key, "Authorization: Bearer cvk_bad"))
    assert_json_error(status, headers, payload, 400, "INVALID_INPUT")
    assert 'error="invalid_request"' in headers["www-authenticate"]


@pytest.mark.parametrize("bad_line", ["X-Bad: a\x00b", "X-Bad: a\rb", "X-Bad: a\nb"])
def test_requests_http_forbids_are_refused_by_the_http_server(server: tuple[str, str], bad_line: str) -> None:
    base, key = server
    status, _, _ = raw_request(base, get_head("/v1/cards", key, bad_line))
    assert status == 400


def test_content_length_beside_chunked_is_refused_by_the_app(server: tuple[str, str]) -> None:
    base, key = server
    head = get_head("/v1/cards", key, "Content-Length: 5", "Transfer-Encoding: chunked")
    status, headers, payload = raw_request(base, head, b"0\r\n\r\n")
    assert_json_error(status, headers, payload, 400, "INVALID_INPUT")


def test_the_spec_is_served_as_written(server: tuple[str, str]) -> None:
    base, _ = server
    served = httpx.get(f"{base}/openapi.json").json()
    written = Path(__file__).resolve().parents[2] / "openapi" / "cardvault.yaml"
    assert json.dumps(served).count('"$ref"') == written.read_text().count("$ref") > 100
    assert httpx.get(f"{base}/openapi.yaml").text == written.read_text()


def test_several_api_processes_answer_metrics_that_count_every_process(tmp_path: Path) -> None:
    """`cardvault serve --workers 2`: each process counts its own requests in the folder serve
    gives them, and a scrape answered by either shows the sum (cardvault.adapters.metrics)."""
    token = "metrics-token-0123456789"
    url = fresh_postgres_database("cardvault_metrics", "the several-processes metrics test")
    with redis_server(tmp_path) as (redis_url, _):
        env = {
            **server_env(tmp_path, url),
            "CARDVAULT_REDIS_URL": redis_url,
            "CARDVAULT_METRICS_TOKEN": token,
            "TMPDIR": str(tmp_path),  # where serve makes the processes' metrics folder
        }
        with running_server(env, tmp_path, workers=2) as (base, key):
            (folder,) = tmp_path.glob("cardvault-metrics-*")
            root = base.removesuffix("/v1")
            sent = 40
            for _ in range(sent):  # a connection each: the kernel spreads them over the processes
                assert (
                    httpx.get(f"{base}/cards", headers={"Authorization": f"Bearer {key}"}).status_code == 200
                )
            assert httpx.get(f"{root}/metrics").status_code == 401
            scraped = httpx.get(f"{root}/metrics", headers={"Authorization": f"Bearer {token}"})
    assert scraped.status_code == 200
    assert not folder.exists()  # removed when the server stopped
    counted = {
        sample.labels["status"]: sample.value
        for family in text_string_to_metric_families(scraped.text)
        for sample in family.samples
        if sample.name == "cardvault_http_requests_total" and sample.labels["operation"] == "listCards"
    }
    assert counted == {"200": sent}, scraped.text[:3000]
    pids = {
        sample.labels.get("pid")
        for family in text_string_to_metric_families(scraped.text)
        for sample in family.samples
        if sample.name == "cardvault_http_requests_total"
    }
    assert pids == {None}  # summed over the processes, not shown one by one


def printed_link(tmp_path: Path) -> str:
    """The sign-in link serve's banner names: off a terminal, redacted, and in a file of its own."""
    printed = (tmp_path / "server.log").read_text()
    shown = re.search(
        r"Sign in to its card pages \(once, within 15 minutes\): (\S+) \(the link is in (\S+)\)", printed
    )
    assert shown is not None, printed
    link = Path(shown[2]).read_text().strip()
    assert shown[1] == link.split("token=")[0] + "token=[redacted]" and link.split("token=")[1] not in printed
    assert Path(shown[2]).stat().st_mode & 0o777 == 0o600
    return link


def click_link(browser: httpx.Client, link: str) -> httpx.Response:
    """Open the link's page and press its button, as a person does (opening it spends nothing)."""
    page = browser.get(link)
    assert page.status_code == 200, page.text
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text)
    assert csrf is not None, page.text
    form = {"csrf": csrf[1], "token": link.split("token=")[1]}
    return browser.post(link.split("?")[0], data=form)


def test_the_embedded_default_prints_a_sign_in_link_that_opens_its_cards_pages(tmp_path: Path) -> None:
    """A fresh clone's first run: the local account has no password, so serve names a link
    that signs a browser in once, and a card's appUrl then opens."""
    with running_server(server_env(tmp_path), tmp_path) as (base, _):
        printed = (tmp_path / "server.log").read_text()
        key = re.search(r"API key of the local account: (\S+)", printed)
        assert key is not None, printed
        link = [printed_link(tmp_path)]
        card = httpx.post(
            f"{base}/cards",
            json={"content": "Opened from a fresh clone"},
            headers={"Authorization": f"Bearer {key[1]}"},
        ).json()
        with httpx.Client(follow_redirects=True) as browser:
            assert browser.get(card["appUrl"]).url.path == "/sign-in"  # signed out: sent to sign in
            assert browser.head(link[0]).status_code == 200  # a mail scanner's look spends nothing
            signed_in = click_link(browser, link[0])
            assert signed_in.status_code == 200 and signed_in.url.path == "/sign-in", signed_in.text
            page = browser.get(card["appUrl"])
            assert page.status_code == 200 and "Opened from a fresh clone" in page.text
            assert click_link(browser, link[0]).status_code == 400  # once


def test_the_servers_log_is_json_lines_that_name_each_request_and_show_no_secret(tmp_path: Path) -> None:
    """Every path that logs, with a secret in each: a key in Authorization (taken and refused),
    Basic credentials, a sign-in link's token, a session cookie, a signed upload URL and a
    webhook's signing secret. The log (standard error off a terminal) is JSON lines naming each
    request; none of them shows a secret. (Serve's banner prints the local key, which is in the
    data directory too; off a terminal it names the sign-in link redacted, and its file.)"""
    with running_server(server_env(tmp_path), tmp_path) as (base, key):
        root = base.removesuffix("/v1")
        auth = {"Authorization": f"Bearer {key}"}
        listed = httpx.get(f"{base}/cards", headers=auth)
        refused_key = key[:-8] + ("AAAAAAAA" if not key.endswith("AAAAAAAA") else "BBBBBBBB")
        httpx.get(f"{base}/cards", headers={"Authorization": f"Bearer {refused_key}"})
        httpx.get(f"{base}/cards", headers={"Authorization": "Basic dXNlcjpodW50ZXIyLXNlY3JldA=="})
        link = printed_link(tmp_path)
        with httpx.Client() as browser:
            opened = click_link(browser, link)
        session = opened.cookies.get("cv_session") or ""
        httpx.get(f"{root}/sign-in", cookies={"cv_session": session})
        data = b"a text file\n"
        ticket = httpx.post(
            f"{base}/uploads",
            json={"fileName": "a.txt", "fileSize": len(data), "mimeType": "text/plain"},
            headers=auth,
        ).json()
        assert httpx.put(ticket["uploadUrl"], content=data, headers=ticket["headers"]).status_code == 200
        made = httpx.post(
            f"{base}/webhooks", json={"url": "https://hooks.example.com/in", "events": ["*"]}, headers=auth
        ).json()
    logged = (tmp_path / "server.log").read_text()
    lines = [json.loads(line) for line in logged.splitlines() if line.startswith("{")]
    secrets_sent = {
        "the key": key,
        "the refused key": refused_key,
        "Basic credentials": "dXNlcjpodW50ZXIyLXNlY3JldA==",
        "the link's token": link.rsplit("=", 1)[1],
        "the session": session,
        "the upload URL's signature": ticket["uploadUrl"].rsplit("/", 1)[1],
        "the webhook secret": made["secret"].removeprefix("whsec_"),
    }
    assert all(secrets_sent.values()), secrets_sent
    in_log = [
        name for name, secret in secrets_sent.items() if any(secret in json.dumps(line) for line in lines)
    ]
    assert in_log == []
    assert secrets_sent["the link's token"] not in logged  # nor in the banner
    requests = [line for line in lines if line["logger"] == "cardvault.requests"]
    (first,) = [line for line in requests if line.get("requestId") == listed.headers["X-Request-Id"]]
    assert (first["operation"], first["status"], first["method"], first["path"]) == (
        "listCards",
        200,
        "GET",
        "/v1/cards",
    )
    assert first["accountId"].startswith("acc_") and first["durationMs"] >= 0
    assert {line["operation"] for line in requests} >= {
        "listCards",
        "createUpload",
        "files",
        "web",
        "createWebhook",
    }
