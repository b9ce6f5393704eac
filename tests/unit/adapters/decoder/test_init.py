"""The decoder's child process (cardvault.adapters.decoder): limits, and a fresh child after a stall
or a crash."""

from __future__ import annotations

import io
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image

from cardvault.adapters.decoder import Decoder
from cardvault.adapters.images import ImageRefused


def _image(path: Path, size: tuple[int, int], fmt: str = "PNG") -> Path:
    buffer = io.BytesIO()
    Image.effect_noise(size, 64).convert("RGB").save(buffer, fmt)
    path.write_bytes(buffer.getvalue())
    return path


def test_a_stalled_decode_times_out_and_the_next_image_gets_a_fresh_child(tmp_path: Path) -> None:
    big = _image(tmp_path / "big.png", (3000, 3000))
    small = _image(tmp_path / "small.png", (64, 48))
    decoder = Decoder(timeout=0.001)
    try:
        with pytest.raises(ImageRefused) as refused:
            decoder.renditions(big)
        assert refused.value.code == "DECODE_TIMEOUT"
        decoder.timeout = 30
        made = decoder.renditions(small)
        assert (made.width, made.height, made.animated) == (64, 48, False)
    finally:
        decoder.close()


def test_a_child_that_died_is_replaced(tmp_path: Path) -> None:
    small = _image(tmp_path / "small.jpg", (64, 48), "JPEG")
    decoder = Decoder()
    try:
        first = decoder.renditions(small)
        decoder._child.kill()  # as the kernel does past the memory limit
        decoder._child.wait()
        assert decoder.renditions(small) == first
    finally:
        decoder.close()


def test_a_file_that_is_no_image_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "a.txt"
    text.write_text("not an image")
    decoder = Decoder()
    try:
        with pytest.raises(ImageRefused) as refused:
            decoder.renditions(text)
        assert refused.value.code == "IMAGE_UNSUPPORTED"
    finally:
        decoder.close()


def test_a_caller_that_would_wait_too_long_for_the_decoder_is_told_it_is_busy(tmp_path: Path) -> None:
    big = _image(tmp_path / "big.png", (3000, 3000))
    small = _image(tmp_path / "small.png", (64, 48))
    decoder = Decoder(wait=0.01)
    try:
        decoder.renditions(small)  # the child is up
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(decoder.renditions, big)
            time.sleep(0.05)  # the first holds the decoder now
            with pytest.raises(ImageRefused) as refused:
                decoder.renditions(small)
            assert refused.value.code == "DECODE_BUSY"
            assert first.result().width == 3000
    finally:
        decoder.close()
