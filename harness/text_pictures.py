"""Pictures of printed words the OCR tests and bench make for themselves (Pillow, at run time):
a line-wrapped text in a font and size, with or without noise, as PNG, JPEG or an image-only
(scanned) PDF; a photo-like picture with no text; and the slow ones of the hostile corpus.
Also what the OCR engine needs from Debian: ``ensure_language_files`` installs
``tesseract-ocr-eng`` with apt-get where it is missing (as the browser tier installs Chromium)."""

from __future__ import annotations

import io
import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

from cardvault.adapters import ocr
from harness import debian

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
FONTS = (
    "DejaVuSans.ttf",
    "DejaVuSerif.ttf",
    "DejaVuSansMono.ttf",
    "DejaVuSans-Bold.ttf",
    "DejaVuSerif-Italic.ttf",
    None,  # Pillow's own
)
WORDS = tuple(
    " ".join(
        (
            "harbour tide table morning receipt total coffee invoice number window garden river",
            "station ticket platform quarter pepper kitchen recipe butter flour sugar yellow market",
            "bridge library journal summer winter orange silver planet rocket engine camera lesson",
            "answer meeting project budget office letter sunday monday friday street museum",
        )
    ).split(" ")
)


def font(name: str | None, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """A DejaVu font of the machine's, else Pillow's own (it ships one)."""
    path = FONT_DIR / name if name else None
    if path is not None and path.exists():
        return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def words(count: int, seed: int) -> list[str]:
    """``count`` words drawn from WORDS, the same for the same seed."""
    chosen = random.Random(seed)  # noqa: S311 - test data, no secret
    return [chosen.choice(WORDS) for _ in range(count)]


def printed(
    text: list[str],
    *,
    font_name: str | None = "DejaVuSans.ttf",
    size: int = 28,
    width: int = 1200,
    noise: float = 0.0,
    seed: int = 0,
) -> Image.Image:
    """The words, dark on light, wrapped into lines of ``width`` pixels; ``noise``: the standard
    deviation of grey noise added (0-255), with a slight blur, as a phone photo of a page has."""
    face = font(font_name, size)
    lines, line = [], ""
    for word in text:
        candidate = f"{line} {word}".strip()
        if face.getlength(candidate) > width - 2 * size and line:
            lines.append(line)
            line = word
        else:
            line = candidate
    lines.append(line)
    height = int(size * 1.6) * len(lines) + 2 * size
    picture = Image.new("L", (width, height), 245)
    draw = ImageDraw.Draw(picture)
    for index, shown in enumerate(lines):
        draw.text((size, size + index * int(size * 1.6)), shown, font=face, fill=20)
    if noise:
        grain = Image.effect_noise(picture.size, noise)
        picture = Image.blend(picture, grain, 0.35).filter(ImageFilter.GaussianBlur(0.6))
    return picture.convert("RGB")


def encoded(picture: Image.Image, kind: str) -> bytes:
    """The picture as ``png``, ``jpeg`` or an image-only ``pdf`` (a scanned page at 150 dpi)."""
    out = io.BytesIO()
    if kind == "pdf":
        picture.save(out, "PDF", resolution=150.0)
    else:
        picture.save(out, kind.upper(), **({"quality": 90} if kind == "jpeg" else {}))
    return out.getvalue()


def photo(size: tuple[int, int] = (800, 600), seed: int = 1) -> Image.Image:
    """A photo-like picture with no text: soft colour blobs under grain."""
    chosen = random.Random(seed)  # noqa: S311 - test data, no secret
    picture = Image.new("RGB", size, (120, 140, 110))
    draw = ImageDraw.Draw(picture)
    for _ in range(40):
        x, y = chosen.randrange(size[0]), chosen.randrange(size[1])
        radius = chosen.randrange(20, 160)
        colour = tuple(chosen.randrange(40, 220) for _ in range(3))
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=colour)
    picture = picture.filter(ImageFilter.GaussianBlur(12))
    grain = Image.effect_noise(size, 40).convert("RGB")
    return Image.blend(picture, grain, 0.25)


def slow_pictures() -> dict[str, bytes]:
    """Pictures made to be slow to read: huge dimensions, a page of tiny glyphs, pure noise."""
    huge = Image.new("L", (9_000, 9_000), 250)
    ImageDraw.Draw(huge).text((200, 200), "a harbour at the corner", font=font("DejaVuSans.ttf", 120), fill=0)
    tiny = printed(words(9_000, 7), size=7, width=3_000, font_name="DejaVuSans.ttf")
    noise = Image.effect_noise((4_000, 3_000), 120)
    return {
        "huge.png": encoded(huge, "png"),
        "tiny-glyphs.png": encoded(tiny.convert("L"), "png"),
        "noise.png": encoded(noise, "png"),  # (grey: 12 MB, under the upload's 20)
    }


def ensure_language_files() -> str:
    """Install Debian's English language file for Tesseract where none is found (as root, or
    through sudo without a password); return what went wrong, or ''."""
    if ocr.usable_languages(("eng",)):
        return ""
    if not ocr.installed():
        return "the ocr extra is not installed (pip install -e '.[ocr]')"
    problem = debian.install("tesseract-ocr-eng")
    if problem:
        return problem
    return "" if ocr.usable_languages(("eng",)) else "no eng.traineddata after installing"
