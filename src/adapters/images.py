"""Images made into renditions, in the decoder's child process (cardvault.adapters.decoder, job
``image``): uploaded images are untrusted, so Pillow reads them only there.

``make(path)`` answers an image's display size and two WebP renditions: ``compact`` (fits
256 x 256) and ``placeholder`` (fits 48 x 48), and with ``large`` a third that fits 1200 x 1200
(a link's replaced image); EXIF orientation applied, metadata stripped (nothing but the pixels
is written), from the first frame of an animation; and its main colours.

Limits: 100,000,000 pixels (Pillow's decompression-bomb check, turned into an error) and 10,000
pixels a side, both read from the header before anything is decoded (the child's memory and CPU
limits are the decoder's)."""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Iterator
from typing import Any

from cardvault.adapters.renditions import COMPACT, LARGE, PLACEHOLDER, webp

MAX_PIXELS = 100_000_000
MAX_SIDE = 10_000
FORMATS = ("JPEG", "PNG", "GIF", "WEBP", "AVIF")
MAIN_COLOURS, MAIN_SHARE = 5, 0.05


@dataclasses.dataclass(frozen=True)
class Renditions:
    width: int  # as displayed (after EXIF orientation)
    height: int
    animated: bool
    compact: bytes  # WebP
    placeholder: bytes  # WebP
    large: bytes | None = None  # WebP, when asked for
    colors: tuple[str, ...] = ()  # the main colours, "#rrggbb", most covering first


class ImageRefused(Exception):
    """The image cannot be made into renditions; ``code`` is stable: IMAGE_TOO_LARGE,
    IMAGE_UNREADABLE, IMAGE_UNSUPPORTED, DECODE_TIMEOUT, DECODE_FAILED, or DECODE_BUSY (the
    decoder stayed busy with other images longer than the caller waits)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@contextlib.contextmanager
def refusals() -> Iterator[None]:
    """Pillow set to refuse decompression bombs, and its failures on an untrusted image made
    into ImageRefused with their codes (in the child; the OCR job reads images through it too)."""
    from PIL import Image, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    warnings.simplefilter("error", Image.DecompressionBombWarning)
    try:
        yield
    except ImageRefused:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRefused("IMAGE_TOO_LARGE", f"The image has too many pixels: {exc}") from None
    except UnidentifiedImageError:
        raise ImageRefused(
            "IMAGE_UNSUPPORTED", "The file is not a JPEG, PNG, GIF, WebP or AVIF image."
        ) from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageRefused("IMAGE_UNREADABLE", f"The image cannot be read: {exc}") from None


def make(path: str, large: bool = False) -> Renditions:
    """Decode the image at ``path`` and make its renditions (runs in the child)."""
    from PIL import Image, ImageOps  # in the child only

    with refusals(), Image.open(path, formats=FORMATS) as image:
        width, height = image.size
        if max(width, height) > MAX_SIDE:
            raise ImageRefused(
                "IMAGE_TOO_LARGE", f"The image is {width} x {height}; at most {MAX_SIDE} a side."
            )
        if image.getexif().get(0x0112) in (5, 6, 7, 8):  # turned a quarter: sides swap
            width, height = height, width
        animated = bool(getattr(image, "is_animated", False))
        image.seek(0)
        if image.format == "JPEG":  # decode at a fraction of the size
            side = LARGE if large else COMPACT * 2
            image.draft("RGB", (side, side))
        frame = ImageOps.exif_transpose(image)
        alpha = frame.mode in ("RGBA", "LA", "PA") or "transparency" in frame.info
        frame = frame.convert("RGBA" if alpha else "RGB")
        big = webp(frame.copy(), LARGE, 85)[1] if large else None
        compact_image, compact = webp(frame, COMPACT, 80)
        main = main_colours(compact_image)
        _, placeholder = webp(compact_image.copy(), PLACEHOLDER, 50)
    return Renditions(width, height, animated, compact, placeholder, big, main)


def main_colours(image: Any) -> tuple[str, ...]:
    """Up to MAIN_COLOURS colours that each cover at least MAIN_SHARE of the picture once it is
    reduced to 8 colours (median cut), most covering first; transparent pixels do not count."""
    from PIL import Image

    rgb = image.convert("RGB")
    if image.mode == "RGBA":  # only the pixels one sees are reduced
        alpha = image.getchannel("A").get_flattened_data()
        visible = [pixel for pixel, a in zip(rgb.get_flattened_data(), alpha, strict=True) if a >= 128]
        if not visible:
            return ()
        rgb = Image.new("RGB", (len(visible), 1))
        rgb.putdata(visible)
    reduced = rgb.quantize(colors=8, method=Image.Quantize.MEDIANCUT)
    palette = reduced.getpalette() or []
    counts = sorted(reduced.getcolors(256) or [], key=lambda c: (-c[0], c[1]))
    total = sum(n for n, _ in counts)
    found: list[str] = []
    for count, index in counts:
        if len(found) == MAIN_COLOURS or count < total * MAIN_SHARE:
            break
        value = "#{:02x}{:02x}{:02x}".format(*palette[index * 3 : index * 3 + 3])
        if value not in found:
            found.append(value)
    return tuple(found)
