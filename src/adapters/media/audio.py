"""An audio file's duration and waveform, and a file's sound for speech recognition (in the
decoder's child).

The waveform: ``detail`` (WAVEFORM_DETAIL buckets) and ``grid`` (WAVEFORM_GRID buckets): each
bucket the loudest sample of any channel in its stretch of time, at the file's own rate, as a
fraction of the loudest sample of the file (0 to 1, 3 decimals; all 0 for silence). Up to
FULL_DECODE_SECONDS every sample counts; a longer file is sampled, each bucket the loudest of
the first SAMPLED_SECONDS at its start (its cost no longer grows with the length)."""

from __future__ import annotations

from typing import Any

from cardvault.adapters.media import MediaRefused
from cardvault.adapters.media.containers import open_container, stated_seconds

WAVEFORM_DETAIL = 1000
WAVEFORM_GRID = 64
WAVEFORM_RATE = 8000  # the rate assumed where a file states none
FULL_DECODE_SECONDS = 20 * 60
SAMPLED_SECONDS = 0.1  # of a longer file, the stretch read at the start of each bucket


def audio(path: str, mime_type: str) -> dict[str, Any]:
    """An audio file's duration and waveform."""
    import av

    with open_container(path, mime_type) as container:
        if not container.streams.audio or container.streams.audio[0].codec_context is None:
            raise MediaRefused("MEDIA_UNREADABLE", "The file has no audio that can be decoded.")
        stream = container.streams.audio[0]
        seconds = stated_seconds(container, stream)
        try:
            if seconds <= FULL_DECODE_SECONDS:
                peaks = _all_peaks(container, stream)
            else:
                peaks = _sampled_peaks(container, stream, seconds)
        except av.FFmpegError as exc:
            raise MediaRefused("MEDIA_UNREADABLE", f"The audio cannot be decoded: {exc}") from None
    return {"durationMs": round(seconds * 1000), "waveform": waveform(peaks)}


def _mono(frame: Any, resampler: Any) -> Any:
    """The loudest channel's magnitude of each sample (no downmix: opposite channels would
    cancel), as finite floats, at the file's own rate (no resampling: it would drop the highs)."""
    import numpy as np

    chunks = [np.abs(f.to_ndarray()).max(axis=0) for f in resampler.resample(frame)]
    samples = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
    return np.nan_to_num(samples, nan=0.0, posinf=1.0, neginf=1.0).clip(0.0, 1.0)


def _resampler() -> Any:
    import av

    return av.AudioResampler(format="fltp")  # planar floats, the file's own layout and rate


def _all_peaks(container: Any, stream: Any) -> Any:
    """The loudest sample of every 10 ms, from every sample."""
    import numpy as np

    resampler, blocks, carry = _resampler(), [], np.zeros(0, dtype=np.float32)
    step = max(1, (stream.codec_context.sample_rate or WAVEFORM_RATE) // 100)
    decoded = 0.0
    for frame in container.decode(stream):
        decoded += frame.samples / (frame.sample_rate or WAVEFORM_RATE)
        if decoded > FULL_DECODE_SECONDS * 2:  # the header understated the length
            break
        samples = np.concatenate((carry, _mono(frame, resampler)))
        whole = len(samples) // step * step
        if whole:
            blocks.append(samples[:whole].reshape(-1, step).max(axis=1))
        carry = samples[whole:]
    carry = np.concatenate((carry, _mono(None, resampler)))  # what the resampler held back
    if len(carry):
        blocks.append(np.array([carry.max()], dtype=np.float32))
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)


def _sampled_peaks(container: Any, stream: Any, seconds: float) -> Any:
    """The loudest sample of the frame at the start of each bucket."""
    import numpy as np

    peaks = np.zeros(WAVEFORM_DETAIL, dtype=np.float32)
    for bucket in range(WAVEFORM_DETAIL):
        at = seconds * bucket / WAVEFORM_DETAIL
        container.seek(int(at / stream.time_base), stream=stream, backward=True, any_frame=False)
        resampler, heard = _resampler(), 0.0
        for frame in container.decode(stream):
            # Some decoders (MP3's) answer silence for the first frame after a seek: a stretch
            # of SAMPLED_SECONDS is read, and the resampler (which holds samples back) flushed.
            samples = _mono(frame, resampler)
            peaks[bucket] = max(peaks[bucket], float(samples.max()) if len(samples) else 0.0)
            heard += frame.samples / (frame.sample_rate or WAVEFORM_RATE)
            if heard >= SAMPLED_SECONDS:
                break
        flushed = _mono(None, resampler)
        peaks[bucket] = max(peaks[bucket], float(flushed.max()) if len(flushed) else 0.0)
    return peaks


def waveform(peaks: Any) -> dict[str, list[float]]:
    """``detail`` and ``grid`` from a run of peaks, as fractions of the loudest."""
    import numpy as np

    peaks = np.asarray(peaks, dtype=np.float32)
    if len(peaks) == 0:
        return {"detail": [], "grid": []}

    def pooled(count: int) -> list[float]:
        parts = np.array_split(peaks, min(count, len(peaks)))
        top = float(peaks.max())
        return [round(float(part.max()) / top, 3) if top > 0 else 0.0 for part in parts]

    return {"detail": pooled(WAVEFORM_DETAIL), "grid": pooled(WAVEFORM_GRID)}


def speech_samples(path: str, mime_type: str, *, seconds: float, rate: int) -> Any:
    """The file's first sound track from its start, at most ``seconds``, as mono float32 at
    ``rate`` (for speech recognition); empty when it has no sound."""
    import av
    import numpy as np

    limit = int(seconds * rate)
    chunks: list[Any] = []
    total = 0
    with open_container(path, mime_type) as container:
        if not container.streams.audio:
            return np.zeros(0, dtype=np.float32)
        resampler = av.AudioResampler(format="flt", layout="mono", rate=rate)
        try:
            for frame in container.decode(container.streams.audio[0]):
                for out in resampler.resample(frame):
                    chunk = out.to_ndarray().reshape(-1)
                    chunks.append(chunk)
                    total += chunk.size
                if total >= limit:
                    break
        except av.FFmpegError as exc:
            raise MediaRefused("MEDIA_UNREADABLE", f"The sound cannot be read: {exc}") from None
    samples = np.concatenate(chunks)[:limit] if chunks else np.zeros(0, dtype=np.float32)
    return np.nan_to_num(samples, nan=0.0, posinf=1.0, neginf=-1.0).astype(np.float32, copy=False)
