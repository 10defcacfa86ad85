"""`fk.analysis.animate`: a short run's animation as MP4 (imageio-ffmpeg's ffmpeg) and GIF (Pillow),
read back: its frames, their size, particles that move between frames and beached ones in red."""

import re
import subprocess

import numpy as np
import pytest
from test_grid_kernel import gridded, seeds

import flowkit as fk

FRAMES = 9


@pytest.fixture(scope="module")
def drifted():
    """A global grid with an island, 300 particles over a day saved every 3 h, some beaching."""
    field = gridded(dtype="float32")
    traj = fk.track(field, seeds(field, 300), 0.0, 86400.0, 1800.0, save_every=6)
    assert len(traj.times) == FRAMES
    assert np.any(np.asarray(traj.status[-1]) == fk.Status.BEACHED)
    return field, traj


def frames_of(path):
    """The frames of an MP4 or GIF as RGB arrays."""
    if path.suffix == ".gif":
        from PIL import Image, ImageSequence

        with Image.open(path) as movie:
            return [np.asarray(frame.convert("RGB")) for frame in ImageSequence.Iterator(movie)]
    import imageio_ffmpeg

    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
    decoded = subprocess.run(command, capture_output=True, check=True)
    width, height = map(int, re.search(r"Video: .*?, (\d+)x(\d+)", decoded.stderr.decode()).groups())
    return list(np.frombuffer(decoded.stdout, np.uint8).reshape(-1, height, width, 3))


@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_an_animation_shows_every_frame_with_its_particles_moving(suffix, drifted, tmp_path):
    """One frame per saved time, all of one even size; between the first and last frames the
    particle layer changes well beyond the label; the last frame shows beached particles in red."""
    field, traj = drifted
    path = fk.analysis.animate(traj, tmp_path / f"run{suffix}", field=field, fps=4, progress=False)
    assert path == tmp_path / f"run{suffix}" and path.stat().st_size > 0
    frames = frames_of(path)
    assert len(frames) == FRAMES
    height, width, _ = frames[0].shape
    assert width % 2 == 0 and height % 2 == 0 and width > 400 and height > 200
    assert all(frame.shape == frames[0].shape for frame in frames)
    first, last = (frame.astype(int) for frame in (frames[0], frames[-1]))
    changed = np.any(np.abs(first - last) > 40, axis=-1)
    changed[: height // 8, : width // 3] = False  # the time label's corner
    assert changed.sum() > 200
    red = (last[..., 0] > 180) & (last[..., 1] < 90) & (last[..., 2] < 90)
    assert red.sum() >= 9  # at least one beached particle's square


def test_an_animation_refuses_other_formats(drifted, tmp_path):
    field, traj = drifted
    with pytest.raises(ValueError, match="must end in .mp4 or .gif"):
        fk.analysis.animate(traj, tmp_path / "run.avi", field=field)
