"""A URL's normal form: what makes two spellings the same page, and what keeps pages apart."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardvault.domain.urls import MAX_URL, normal_url, url_key, url_site


@pytest.mark.parametrize(
    ("given_url", "normal"),
    [
        ("HTTP://Example.COM", "http://example.com/"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        ("https://example.com./a", "https://example.com/a"),
        ("https://example.com/a/./b/../c", "https://example.com/a/c"),
        ("https://example.com/%7euser/caf%c3%a9", "https://example.com/~user/caf%C3%A9"),
        ("https://bücher.de/ä", "https://xn--bcher-kva.de/%C3%A4"),
        ("https://example.com/?b=2&a=1", "https://example.com/?a=1&b=2"),
        (
            "https://example.com/a?utm_source=news&utm_MEDIUM=mail&id=7&fbclid=x&gclid=y&MSCLKID=z",
            "https://example.com/a?id=7",
        ),
        ("https://example.com/a?utm_campaign=x", "https://example.com/a"),
        ("https://example.com/a#section-2", "https://example.com/a"),
        ("https://example.com/#!/inbox", "https://example.com/#!/inbox"),
        ("https://example.com/#/settings", "https://example.com/#/settings"),
        ("  https://example.com/a  ", "https://example.com/a"),
        ("https://user:pw@Example.com:443/", "https://user:pw@example.com/"),
        ("http://[::1]:80/a", "http://[::1]/a"),
    ],
)
def test_spellings_of_one_page_have_one_normal_form(given_url: str, normal: str) -> None:
    assert normal_url(given_url) == normal
    assert url_key(given_url) == url_key(normal)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("http://example.com/a", "https://example.com/a"),
        ("https://www.example.com/a", "https://example.com/a"),
        ("https://example.com/a", "https://example.com/a/"),
        ("https://example.com/a?id=1", "https://example.com/a?id=2"),
        ("https://example.com/A", "https://example.com/a"),
        ("https://example.com/a?source=x", "https://example.com/a"),  # only named trackers go
    ],
)
def test_different_pages_stay_apart(one: str, other: str) -> None:
    assert url_key(one) != url_key(other)


@pytest.mark.parametrize(
    "not_a_page",
    [
        "ftp://example.com/a",
        "javascript:alert(1)",
        "data:text/html,<b>x</b>",
        "https://",
        "https://example.com:99999/a",
        "https://example.com:x/a",
        "http://[::1/a",
        "example.com/a",
        "https://example.com/" + "a" * MAX_URL,
    ],
)
def test_what_is_no_http_page_has_no_key(not_a_page: str) -> None:
    assert normal_url(not_a_page) is None
    assert url_key(not_a_page) is None
    assert url_key(None) is None


def test_the_key_has_a_fixed_size() -> None:
    keys = {url_key("https://example.com/" + "a" * n) for n in (0, 10, 2000)}
    assert {len(key or "") for key in keys} == {32} and len(keys) == 3


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_answered_and_a_normal_form_is_its_own(text: str) -> None:
    for candidate in (text, "https://example.com/" + text, "https://" + text):
        normal = normal_url(candidate)
        if normal is not None:
            assert normal_url(normal) == normal


def test_a_site_key_reverses_the_hosts_labels_and_a_host_no_dns_name_could_be_has_none() -> None:
    assert url_site("HTTPS://Blog.Example.com:443/x") == "com.example.blog."
    assert url_site("https://" + "a" * 254 + "/") is None
    assert url_site("mailto:someone@example.com") is None
