"""Media and document files the benchmarks and the tests make for themselves (with PyAV, zipfile
and by hand), small and quick: videos with and without sound or subtitles, audio, a PDF, office
files, archives, and hostile ones; and the one recorded speech sample the repository keeps."""

from __future__ import annotations

import fractions
import io
import tarfile
import zipfile
from pathlib import Path

import av
import numpy as np

# espeak-ng's voice, Opus in Ogg
FOX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "speech" / "fox.ogg"


def video(
    path: Path, *, seconds: int = 4, size: tuple[int, int] = (320, 240), sound: bool = True, rate: int = 10
) -> Path:
    """An H.264 (and AAC) MP4 or Matroska file whose frames change colour over time."""
    width, height = size
    with av.open(str(path), "w") as out:
        picture = out.add_stream("libx264", rate=rate, options={"preset": "ultrafast"})
        picture.width, picture.height, picture.pix_fmt = width, height, "yuv420p"
        picture.codec_context.gop_size = rate  # a key frame a second
        voice = out.add_stream("aac", rate=16000) if sound else None
        if voice is not None:
            voice.layout = "mono"
        for index in range(seconds * rate):
            frame = np.zeros((height, width, 3), dtype=np.uint8)
            frame[:, :, 0] = index * 255 // (seconds * rate)
            frame[: height // 2, : width // 2, 2] = 200
            for packet in picture.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                out.mux(packet)
        for packet in picture.encode():
            out.mux(packet)
        if voice is not None:
            _tone(out, voice, seconds, rate_hz=16000)
    return path


def _tone(out: av.container.OutputContainer, stream: av.AudioStream, seconds: int, rate_hz: int) -> None:
    """A 440 Hz tone that grows from silence to half the full scale."""
    t = np.arange(rate_hz * seconds) / rate_hz
    samples = (0.5 * np.sin(2 * np.pi * 440 * t) * np.linspace(0, 1, t.size)).astype(np.float32)
    for start in range(0, samples.size, 1024):
        chunk = samples[start : start + 1024].reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(chunk, format="flt", layout="mono")
        frame.sample_rate, frame.pts, frame.time_base = rate_hz, start, fractions.Fraction(1, rate_hz)
        for packet in stream.encode(frame):
            out.mux(packet)
    for packet in stream.encode():
        out.mux(packet)


def audio(path: Path, *, seconds: int = 3, codec: str = "mp3") -> Path:
    """An MP3 (or another codec's file, by ``path``'s suffix) of a growing tone."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=16000 if codec != "mp3" else 22050)
        stream.layout = "mono"
        _tone(out, stream, seconds, rate_hz=stream.rate)
    return path


SRT = (
    "1\n00:00:00,500 --> 00:00:01,500\nSourdough rises with {\\i1}wild yeast{\\i0}.\n\n"
    "2\n00:00:02,000 --> 00:00:03,000\nFeed the starter\nevery day.\n\n"
)


def with_subtitles(path: Path, source: Path, srt: str = SRT, language: str = "eng") -> Path:
    """A Matroska copy of ``source``'s video with a subtitle track."""
    captions = path.with_suffix(".srt")
    captions.write_text(srt, encoding="utf-8")
    with av.open(str(source)) as video_in, av.open(str(captions)) as subs_in, av.open(str(path), "w") as out:
        picture = out.add_stream_from_template(video_in.streams.video[0])
        track = out.add_stream_from_template(subs_in.streams[0])
        track.metadata["language"] = language
        for stream_in, stream_out, container in ((video_in.streams.video[0], picture, video_in),
                                                 (subs_in.streams[0], track, subs_in)):  # fmt: skip
            for packet in container.demux(stream_in):
                if packet.dts is None:
                    continue
                packet.stream = stream_out
                out.mux(packet)
    return path


def pdf(pages: list[str]) -> bytes:
    """A PDF of these pages, each a line of text in Helvetica, written by hand."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", ""]
    kids = []
    for number, line in enumerate(pages):
        page_object, content_object = 4 + 2 * number, 5 + 2 * number
        kids.append(f"{page_object} 0 R")
        stream = f"BT /F1 18 Tf 72 720 Td ({line}) Tj ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {content_object} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(pages)} >>"
    objects.insert(2, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n{body}\nendobj\n".encode())
    table = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{table}\n%%EOF\n".encode())
    return out.getvalue()


def _zip(parts: dict[str, str | bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return out.getvalue()


_CONTENT_TYPES = (
    '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'
)


def docx(paragraphs: list[str], *, pages: int = 2, words: int = 120) -> bytes:
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    return _zip(
        {
            "[Content_Types].xml": _CONTENT_TYPES,
            "word/document.xml": f'<w:document xmlns:w="w"><w:body>{body}</w:body></w:document>',
            "docProps/app.xml": f"<Properties><Pages>{pages}</Pages><Words>{words}</Words></Properties>",
        }
    )


def pptx(slides: list[str]) -> bytes:
    parts: dict[str, str | bytes] = {"[Content_Types].xml": _CONTENT_TYPES}
    for number, text in enumerate(slides, start=1):
        parts[f"ppt/slides/slide{number}.xml"] = (
            f'<p:sld xmlns:a="a"><a:p><a:r><a:t>{text}</a:t></a:r></a:p></p:sld>'
        )
    return _zip(parts)


def xlsx(sheets: int, strings: list[str]) -> bytes:
    parts: dict[str, str | bytes] = {"[Content_Types].xml": _CONTENT_TYPES}
    for number in range(1, sheets + 1):
        parts[f"xl/worksheets/sheet{number}.xml"] = "<worksheet/>"
    parts["xl/sharedStrings.xml"] = "<sst>" + "".join(f"<si><t>{s}</t></si>" for s in strings) + "</sst>"
    return _zip(parts)


def archive(files: dict[str, bytes], folders: tuple[str, ...] = ()) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as written:
        for folder in folders:
            written.writestr(folder.rstrip("/") + "/", b"")
        for name, data in files.items():
            written.writestr(name, data)
    return out.getvalue()


def zip_bomb(inner_bytes: int = 64 * 1024 * 1024) -> bytes:
    """A small ZIP whose one entry unpacks to ``inner_bytes`` of zeros."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as written,
        written.open("zeros.bin", "w", force_zip64=True) as entry,
    ):
        chunk = bytes(1024 * 1024)
        for _ in range(inner_bytes // len(chunk)):
            entry.write(chunk)
    return out.getvalue()


def office_bomb(inner_bytes: int = 64 * 1024 * 1024) -> bytes:
    """A DOCX whose document part unpacks to ``inner_bytes`` of spaces."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as written:
        written.writestr("[Content_Types].xml", _CONTENT_TYPES)
        with written.open("word/document.xml", "w", force_zip64=True) as entry:
            entry.write(b"<w:document><w:body><w:p><w:r><w:t>")
            chunk = b" " * (1024 * 1024)
            for _ in range(inner_bytes // len(chunk)):
                entry.write(chunk)
    return out.getvalue()


def tar(files: dict[str, bytes], folders: tuple[str, ...] = ()) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as written:
        for folder in folders:
            info = tarfile.TarInfo(folder)
            info.type = tarfile.DIRTYPE
            written.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            written.addfile(info, io.BytesIO(data))
    return out.getvalue()


def playlist_as_mp4(url: str) -> bytes:
    """An HLS playlist pointing at ``url``, wearing an MP4 box at its start (as a hostile upload
    would, to pass a sniff) — FFmpeg must never fetch the address."""
    playlist = f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{url}\n#EXT-X-ENDLIST\n".encode()
    return b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2" + playlist
