"""Files: what storing an upload and making renditions cost, each against a bare baseline
measured in the same run, in alternating rounds.

- upload: a 50 MB PUT through the app's local-disk upload URL (streamed to disk, MD5 on the
  way, into place by rename), served by uvicorn, against copying the same bytes from one file to
  another (``shutil.copyfile``); with the server's peak RSS, which must not grow with the file.
- renditions: a 12 MP JPEG made into the 256 px and 48 px WebP renditions by the decoder's
  child process (the whole path: a pipe to the child, limits, EXIF orientation) against a bare
  Pillow ``thumbnail()`` to the same sizes in this process; aim: at most 1.5x. With the child's
  peak RSS.

    .venv/bin/python -m bench.bench_files [--rounds R]

Prints a table and one JSON line per workload.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from PIL import Image

from cardvault.adapters.decoder import Decoder
from cardvault.domain.auth import accounts, keys
from cardvault.domain.database import open_database
from harness.servers import free_port, fresh_database, peak_rss_mb, start_uvicorn

UPLOAD_BYTES = 50 * 1000 * 1000


def _api_key(url: str) -> str:
    db = open_database(url)
    db.migrate()
    with db.transaction() as session:
        account = accounts.create_account(session, name="bench-files")
        key = keys.issue_api_key(session, account_id=account.id)
    db.dispose()
    return key


def bench_upload(rounds: int, workdir: Path) -> dict[str, object]:
    url = fresh_database("sqlite", workdir)
    key = _api_key(url)
    port = free_port()
    env = {
        **os.environ,
        "CARDVAULT_DATABASE_URL": url,
        "CARDVAULT_DATA_DIR": str(workdir),
        "CARDVAULT_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "CARDVAULT_RATE_LIMIT_UPLOADS": "off",
    }
    source = workdir / "source.bin"
    source.write_bytes(os.urandom(UPLOAD_BYTES))
    server = start_uvicorn(["--factory", "cardvault.handlers.http.app:app_from_env"], env, port)
    headers = {"Authorization": f"Bearer {key}"}
    app_seconds, copy_seconds = [], []
    try:
        rss_before = peak_rss_mb(server.pid)
        with httpx.Client(timeout=120) as client:
            for _ in range(rounds):
                ticket = client.post(
                    f"http://127.0.0.1:{port}/v1/uploads",
                    json={"fileName": "big.mp4", "fileSize": UPLOAD_BYTES, "mimeType": "video/mp4"},
                    headers=headers,
                ).json()

                def body() -> object:
                    with source.open("rb") as f:
                        while chunk := f.read(1 << 20):
                            yield chunk

                started = time.perf_counter()
                answer = client.put(ticket["uploadUrl"], content=body(), headers={
                    **ticket["headers"], "Content-Length": str(UPLOAD_BYTES)
                })  # fmt: skip
                app_seconds.append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text
                started = time.perf_counter()
                shutil.copyfile(source, workdir / "copy.bin")
                copy_seconds.append(time.perf_counter() - started)
        rss_after = peak_rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait()
    ratios = [a / c for a, c in zip(app_seconds, copy_seconds, strict=True)]
    return {
        "workload": "upload_50MB",
        "metric": "seconds",
        "value": round(statistics.median(app_seconds), 3),
        "baseline_value": round(statistics.median(copy_seconds), 3),
        "cost_ratio": round(statistics.median(ratios), 2),
        "mb_per_s": round(UPLOAD_BYTES / 1e6 / statistics.median(app_seconds), 1),
        "server_peak_rss_mb_before": round(rss_before, 1),
        "server_peak_rss_mb_after": round(rss_after, 1),
    }


def _photo(path: Path) -> Path:
    """A 12 MP JPEG of camera-like detail (noise over gradients), q88."""
    noise = Image.effect_noise((4000, 3000), 48).convert("RGB")
    gradient = Image.linear_gradient("L").resize((4000, 3000)).convert("RGB")
    Image.blend(noise, gradient, 0.5).save(path, "JPEG", quality=88)
    return path


def _bare(path: Path) -> None:
    """What Pillow alone does for the same two renditions."""
    with Image.open(path) as image:
        image.thumbnail((256, 256))
        compact = io.BytesIO()
        image.save(compact, "WEBP", quality=80, method=4)
        image.thumbnail((48, 48))
        image.save(io.BytesIO(), "WEBP", quality=50, method=4)


def bench_renditions(rounds: int, workdir: Path) -> dict[str, object]:
    photo = _photo(workdir / "photo.jpg")
    decoder = Decoder()
    decoder.renditions(photo)  # start the child
    ours, bare = [], []
    try:
        for round_ in range(rounds):
            for name in ("ours", "bare") if round_ % 2 == 0 else ("bare", "ours"):
                started = time.perf_counter()
                if name == "ours":
                    decoder.renditions(photo)
                else:
                    _bare(photo)
                (ours if name == "ours" else bare).append(time.perf_counter() - started)
        child_rss = peak_rss_mb(decoder._child.pid)
    finally:
        decoder.close()
    ratios = [o / b for o, b in zip(ours, bare, strict=True)]
    return {
        "workload": "renditions_12MP_jpeg",
        "metric": "seconds",
        "value": round(statistics.median(ours), 4),
        "baseline_value": round(statistics.median(bare), 4),
        "cost_ratio": round(statistics.median(ratios), 2),
        "jpeg_bytes": photo.stat().st_size,
        "decoder_peak_rss_mb": round(child_rss, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        results = [bench_upload(args.rounds, Path(workdir)), bench_renditions(args.rounds * 4, Path(workdir))]
    print(f"\n{'workload':<24}{'ours s':>10}{'baseline s':>12}{'ratio':>8}  extra")
    for r in results:
        extra = {
            k: v
            for k, v in r.items()
            if k not in ("workload", "metric", "value", "baseline_value", "cost_ratio")
        }
        print(f"{r['workload']:<24}{r['value']:>10}{r['baseline_value']:>12}{r['cost_ratio']:>8}  {extra}")
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
