"""OCR engines on 50 generated text images (harness.text_pictures: six fonts, 14 to 40 px, the
first 25 clean and the last 25 with grain and blur): word accuracy against the words drawn
(aims: at least 95% on clean, 85% on noisy), seconds per megapixel, and the peak memory of the
process that read them, for each candidate engine.

- tesseract: the ``ocr`` stage's engine (Tesseract 5 through tesserocr, the ocr extra), run as
  the stage runs it: in the OCR child of cardvault.adapters.decoder (sandboxed, one thread,
  words under CARDVAULT_OCR_MIN_CONFIDENCE dropped); its peak is the child's VmHWM;
- rapidocr: rapidocr-onnxruntime 1.4.4 (PaddleOCR's PP-OCRv4 detection and recognition models,
  shipped in its wheel, on ONNX Runtime), in a Python process of its own (it is not a
  dependency of the project: ``pip install rapidocr-onnxruntime==1.4.4`` into a Python given
  as ``--rapidocr-python`` to compare; without it the row says so); its peak is that process's
  maximum RSS, and its time excludes loading the models.

Word accuracy: of the words drawn on an image, how many the engine read (as a multiset, case
and punctuation ignored), over all images of the set; beside it, the share found once the
text read has its spaces left out (``joined``: an engine that runs words together).

    .venv/bin/python -m bench.bench_ocr [--images N] [--rapidocr-python PYTHON]

Prints a table, `uptime` before and after, and one JSON line per engine and set.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cardvault.adapters import ocr
from cardvault.adapters.decoder import Decoder
from harness import text_pictures

SIZES = (14, 18, 22, 28, 34, 40)
_WORD = re.compile(r"[a-z0-9]+")

# Run in a process of its own: ``python -c RAPID folder`` reads every image listed in
# folder/list.json and prints one JSON line: each text, the time of each, its peak RSS.
RAPID = """
import json, resource, sys, time
from pathlib import Path
import numpy
from PIL import Image
from rapidocr_onnxruntime import RapidOCR
engine = RapidOCR()
folder = Path(sys.argv[1])
texts, seconds = [], []
for name in json.loads((folder / "list.json").read_text()):
    picture = numpy.asarray(Image.open(folder / name).convert("RGB"))
    start = time.perf_counter()
    found, _ = engine(picture)
    seconds.append(time.perf_counter() - start)
    texts.append(" ".join(item[1] for item in found or []))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"texts": texts, "seconds": seconds, "peak": peak}))
"""


def images(count: int) -> list[dict[str, Any]]:
    """The set: each image's words, font, size, noise and PNG bytes."""
    made = []
    for index in range(count):
        noisy = index >= count // 2
        font = text_pictures.FONTS[index % len(text_pictures.FONTS)]
        size = SIZES[index % len(SIZES)]
        drawn = text_pictures.words(24, seed=index)
        picture = text_pictures.printed(
            drawn, font_name=font, size=size, noise=28 if noisy else 0, seed=index
        )
        made.append(
            {
                "words": drawn,
                "noisy": noisy,
                "font": font or "Pillow's",
                "size": size,
                "pixels": picture.size[0] * picture.size[1],
                "png": text_pictures.encoded(picture, "png"),
            }
        )
    return made


def read_words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def accuracy(made: list[dict[str, Any]], texts: list[str]) -> float:
    """Of the words drawn, the share read (a multiset match per image)."""
    found = total = 0
    for image, text in zip(made, texts, strict=True):
        drawn = collections.Counter(image["words"])
        read = collections.Counter(read_words(text))
        found += sum(min(n, read[word]) for word, n in drawn.items())
        total += sum(drawn.values())
    return found / total


def spaceless(made: list[dict[str, Any]], texts: list[str]) -> float:
    """Of the words drawn, the share found in the text read with its spaces left out (an engine
    that runs words together reads them, but a search for one does not find them)."""
    found = total = 0
    for image, text in zip(made, texts, strict=True):
        joined = "".join(read_words(text))
        for word in image["words"]:
            at = joined.find(word)
            if at >= 0:
                found += 1
                joined = joined[:at] + joined[at + len(word) :]
            total += 1
    return found / total


def run_tesseract(made: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    """Every image read by the stage's OCR child; the texts, times and the child's peak."""
    tessdata = ocr.tessdata()
    if not ocr.installed() or tessdata is None:
        return {"missing": "the ocr extra or tesseract-ocr-eng is not installed"}
    options = {
        "folder": str(tessdata),
        "languages": ["eng"],
        "min_confidence": 60,
        "max_pixels": 12_000_000,
        "pages": 1,
        "seconds": 60.0,
        "memory": 1024**3,
    }
    decoder = Decoder()
    texts, seconds = [], []
    try:
        for index, _ in enumerate(made):
            start = time.perf_counter()
            head = decoder.ocr(folder / f"{index}.png", source="image", options=options)
            seconds.append(time.perf_counter() - start)
            texts.append(head["text"])
        peak = _child_peak(decoder)
    finally:
        decoder.close()
    return {"texts": texts, "seconds": seconds, "peak": peak}


def _child_peak(decoder: Decoder) -> int:
    pid = decoder.child_pid
    assert pid is not None
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) * 1024


def run_rapidocr(made: list[dict[str, Any]], folder: Path, python: str) -> dict[str, Any]:
    (folder / "list.json").write_text(json.dumps([f"{i}.png" for i in range(len(made))]))
    done = subprocess.run(
        [python, "-c", RAPID, str(folder)], capture_output=True, text=True, timeout=3600, check=False
    )
    if done.returncode != 0:
        return {"missing": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def uptime() -> str:
    program = shutil.which("uptime")
    if program is None:
        return "(no uptime)"
    return subprocess.run([program], capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=50)
    parser.add_argument(
        "--rapidocr-python", default=sys.executable, help="a Python with rapidocr-onnxruntime"
    )
    args = parser.parse_args()
    count = args.images
    print("before:", uptime())
    made = images(count)
    with tempfile.TemporaryDirectory(prefix="bench-ocr-") as workdir:
        folder = Path(workdir)
        for index, image in enumerate(made):
            (folder / f"{index}.png").write_bytes(image["png"])
        results = {
            "tesseract": run_tesseract(made, folder),
            "rapidocr": run_rapidocr(made, folder, args.rapidocr_python),
        }
    print(f"{'engine':<10} {'set':<6} {'words':>7} {'joined':>7} {'s/MP':>7} {'peak MiB':>9}")
    for engine, result in results.items():
        if "missing" in result:
            print(f"{engine:<10} not run: {result['missing']}")
            continue
        for name, noisy in (("clean", False), ("noisy", True)):
            chosen = [i for i, image in enumerate(made) if image["noisy"] == noisy]
            subset = [made[i] for i in chosen]
            texts = [result["texts"][i] for i in chosen]
            share, joined = accuracy(subset, texts), spaceless(subset, texts)
            megapixels = sum(image["pixels"] for image in subset) / 1e6
            per_mp = sum(result["seconds"][i] for i in chosen) / megapixels
            peak = result["peak"] / 1024**2
            print(f"{engine:<10} {name:<6} {share:>7.1%} {joined:>7.1%} {per_mp:>7.2f} {peak:>9.0f}")
            line = {"engine": engine, "set": name, "images": len(subset), "wordAccuracy": round(share, 4)}
            line["wordsIgnoringSpaces"] = round(joined, 4)
            print(json.dumps({**line, "secondsPerMegapixel": round(per_mp, 3), "peakMiB": round(peak)}))
    print("after:", uptime())


if __name__ == "__main__":
    main()
