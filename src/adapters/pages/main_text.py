"""What trafilatura reads of a page: its main text, and the metadata the markup does not state."""

from __future__ import annotations

from typing import Any

TEXT_CHARS = 256 * 1024  # the part of a page trafilatura reads


def extract(html: Any, url: str) -> dict[str, Any]:
    """What trafilatura reads of the page's metadata (title, author, date, description, image),
    the last source of each, and its main text: from the page's first TEXT_CHARS (its cost
    grows with the text)."""
    import trafilatura

    try:
        document = trafilatura.bare_extraction(
            html,
            url=url,
            with_metadata=True,
            favor_precision=True,
            include_comments=False,
            date_extraction_params={"extensive_search": False, "original_date": True},
        )
    except Exception:  # (a page it cannot read is a page without what it adds)
        return {}
    if document is None:
        return {}
    return {
        name: getattr(document, name, None)
        for name in ("title", "author", "date", "description", "image", "text")
    }


def reader(html: str, url: str) -> tuple[str, str] | None:
    """A rendered page's reader view: its main text as Markdown (headings, lists, emphasis,
    tables; no links, images or raw HTML, so a client renders it safely) and as plain text (what
    the AI stage reads), both by trafilatura from the page's first TEXT_CHARS; None when it
    finds no main text."""
    import trafilatura

    page = html[:TEXT_CHARS]
    try:
        markdown = trafilatura.extract(
            page,
            url=url,
            output_format="markdown",
            include_formatting=True,
            include_links=False,
            include_images=False,
            include_comments=False,
            include_tables=True,
            favor_precision=True,
        )
        text = trafilatura.extract(
            page, url=url, output_format="txt", include_comments=False, favor_precision=True
        )
    except Exception:  # (a page it cannot read is a page without a reader view)
        return None
    if not markdown or not text:
        return None
    return markdown.strip(), text.strip()
