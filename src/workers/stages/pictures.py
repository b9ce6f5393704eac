"""The images stages make, decoded in the decoder's child (their pictures are stored by the
rules of cardvault.domain.pipeline.results)."""

from __future__ import annotations

from pathlib import Path

from cardvault.adapters.images import ImageRefused, Renditions
from cardvault.domain.pipeline.errors import StageFailed
from cardvault.services import Services


def decode(services: Services, path: Path, *, large: bool) -> Renditions:
    """Renditions of the image at ``path``, made in the decoder's child process."""
    try:
        return services.decoder.renditions(path, large=large)
    except ImageRefused as refused:
        raise StageFailed(refused.code, str(refused), transient=refused.code == "DECODE_BUSY") from None
