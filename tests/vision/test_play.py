"""`gem play` on a visual task: each image is written as a PNG file and its path shown."""

from __future__ import annotations

import pytest

import gem_core
from gem_core.images import png_bytes
from tests.helpers import gem_command

pytest.importorskip("PIL")


def test_play_writes_the_image_and_shows_its_path(tmp_path):
    folder = tmp_path / "images"
    result = gem_command("play", "vision:Geometry-v0", "--seed", "1", "--image-dir", str(folder),
                         input="/random\n\n/quit\n", env={"COLUMNS": "400"})
    assert result.returncode == 0, result.stderr
    written = folder / "episode1-turn0-image1.png"
    assert f"[image: {written}]" in result.stdout and "<image>" not in result.stdout
    expected = gem_core.make("vision:Geometry-v0").reset(seed=1)[1]["images"][0]
    assert written.read_bytes() == png_bytes(expected)
    assert "'images'" not in result.stdout  # images are shown as files, not as reprs in info
    assert (folder / "episode2-turn0-image1.png").exists()  # the next episode's image
