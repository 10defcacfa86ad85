"""Animations of a run: the particles frame by frame over the field's speed at each saved time
(the surface of an ocean file), the domain's outline and the land, each status in its own colour,
the date or time of each frame, written as an MP4 by the ffmpeg that `imageio-ffmpeg` ships in
its wheel (no system binary), or as a GIF by Pillow.

The figure is laid out and drawn once without what moves; each frame then restores that picture
and draws only the speed and the label on it (matplotlib's blitting), and the particles as
squares of pixels straight into the frame (matplotlib's scatter draws each marker as a path:
0.1 s a frame for 10⁴ particles), so a frame costs a few milliseconds, not a whole figure."""

import contextlib
import logging
import os
from pathlib import Path

import numpy as np

from .._custom_types import PathLike
from .._status import Status
from ..fields.base import AbstractField
from ..fields.streamed import StreamedField
from ..trajectory import Trajectory
from .picture import axes, field_map, figure, land, on_sphere, outline, projection, view_box, when

_log = logging.getLogger("flowkit")

FRAMES = 100
"""Frames an animation shows at most by default (saved times evenly chosen)."""

COLOURS = {
    Status.ACTIVE: (0.12, 0.47, 0.71, 1.0),
    Status.NOT_RELEASED: (0.0, 0.0, 0.0, 0.0),  # not drawn before its release
    Status.BEACHED: (0.84, 0.15, 0.16, 1.0),
    Status.OUT_OF_DOMAIN: (0.0, 0.0, 0.0, 1.0),
    Status.ABSORBED: (0.8, 0.0, 0.8, 1.0),
}
"""Each status's colour (RGBA); any other stop is orange."""
OTHER = (1.0, 0.5, 0.05, 1.0)
DOT = 3
"""A particle's side in pixels."""


def animate(
    traj: Trajectory,
    path: PathLike,
    field: AbstractField | StreamedField | None = None,
    frames: int = FRAMES,
    fps: int = 10,
    max_particles: int = 20_000,
    progress: bool = True,
) -> Path:
    """An animation of `traj` written to `path` (`.mp4` or `.gif`): up to `frames` of its saved
    times (evenly chosen, the first and last among them) at `fps`, up to `max_particles` of its
    particles (evenly chosen), over the field's speed at each frame's time in grey (2-D fields
    and maps, the top level of a 3-D map; on a sphere over its land) and the domain's outline,
    zoomed to the particles as `plot_pathlines` is. Active particles are blue, beached red,
    those that left the domain black, absorbed (deposited) magenta, other stops orange; waiting
    ones are not drawn. Each frame is labelled with its date (dated fields) or time. A progress
    bar runs while it renders.

    An `.mp4` is encoded by `imageio-ffmpeg`'s ffmpeg (a dependency of flowkit); where that
    package is missing, the animation is written as a GIF beside `path` and the log says so.
    Returns the path written."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from tqdm import tqdm

    path = _checked(Path(path))
    times = np.asarray(traj.times, dtype=np.float64)
    shown = np.unique(np.linspace(0, len(times) - 1, max(1, min(int(frames), len(times)))).astype(int))
    n = traj.positions.shape[1]
    rows = np.unique(np.linspace(0, n - 1, max(1, min(n, int(max_particles)))).astype(int))
    xy = np.asarray(traj.positions, dtype=np.float64)[shown][:, rows, :2]
    status = np.asarray(traj.status)[shown][:, rows]
    colours = np.array([COLOURS.get(Status(code), OTHER) for code in range(max(Status) + 1)])
    box = view_box(traj, field)
    fig, ax = figure(box, field)
    origin = None if field is None else field.time_origin
    speeds, image = _speeds(fig, ax, field, times[shown], box)
    label = ax.text(0.02, 0.97, "", transform=ax.transAxes, va="top", fontsize=9, zorder=6, color="0.1")
    present = sorted({int(code) for code in np.unique(status)} - {int(Status.NOT_RELEASED)})
    handles = [
        Line2D([], [], ls="none", marker="o", ms=4, color=colours[c], label=Status(c).name.lower().replace("_", " "))
        for c in present
    ]
    if handles:
        ax.legend(handles=handles, loc="upper right", fontsize=7)
    axes(ax, field, box)
    ax.set_title(f"{len(rows)} of {n} particles{projection(xy, field)}", fontsize=9)
    moving = [artist for artist in (image, label) if artist is not None]
    for artist in moving:  # the still picture first: laid out and drawn once
        artist.set_visible(False)
    fig.canvas.draw()
    fig.set_layout_engine("none")
    still = fig.canvas.copy_from_bbox(fig.bbox)
    for artist in moving:
        artist.set_visible(True)
    width, height = fig.canvas.get_width_height()
    size = (width - width % 2, height - height % 2)  # H.264 takes even sides
    pixels = ax.transData.transform(xy.reshape(-1, 2)).reshape(xy.shape)
    inside = np.array(ax.bbox.extents)  # x0, y0, x1, y1 in pixels from the bottom left
    rgba = np.round(colours * 255).astype(np.uint8)
    rgba[:, 3] = 255
    try:
        with _frames(path, size, fps) as write:
            for k in tqdm(range(len(shown)), desc="animation", unit="frame", disable=not progress):
                fig.canvas.restore_region(still)
                if image is not None:
                    image.set_data(np.ma.masked_invalid(speeds[k]))
                label.set_text(when(origin, times[shown[k]]))
                for artist in moving:
                    ax.draw_artist(artist)
                frame = np.array(fig.canvas.buffer_rgba())
                shown_dots = colours[status[k], 3] > 0
                _dots(frame, pixels[k][shown_dots], rgba[status[k][shown_dots]], inside)
                write(frame if frame.shape[:2] == size[::-1] else np.ascontiguousarray(frame[: size[1], : size[0]]))
    finally:
        plt.close(fig)
    return path


def _dots(frame: np.ndarray, pixels: np.ndarray, rgba: np.ndarray, box: np.ndarray) -> None:
    """Squares of `DOT` pixels of colours `rgba` at `pixels` (x, y from the bottom left) drawn
    into the RGBA `frame` (rows from the top), those within the axes' `box` only."""
    height, width = frame.shape[:2]
    keep = np.all(np.isfinite(pixels), axis=1)
    keep &= (pixels[:, 0] >= box[0]) & (pixels[:, 0] < box[2]) & (pixels[:, 1] >= box[1]) & (pixels[:, 1] < box[3])
    offsets = np.arange(DOT) - DOT // 2
    column = np.clip(np.floor(pixels[keep, 0]).astype(np.int64)[:, None] + offsets, 0, width - 1)
    row = np.clip((height - 1 - np.floor(pixels[keep, 1])).astype(np.int64)[:, None] + offsets, 0, height - 1)
    flat = (row[:, :, None] * width + column[:, None, :]).reshape(len(row), -1)  # (n, DOT²) pixels
    frame.view(np.uint32).reshape(-1)[flat] = rgba[keep].view(np.uint32)[:, :1]


def _speeds(fig, ax, field, times: np.ndarray, box):
    """The field's speed on `field_map`'s grid at each of `times` and the image that shows it
    (grey, its colour bar's limits the 99th percentile over all frames), with the domain's
    outline and, on a sphere, the land beneath it (land has no speed: nothing hides it);
    `([], None)` without a field or where the picture shows no speed (a 3-D plane view, water
    at rest)."""
    if field is None:
        return [], None
    near = lambda t: field.near(t) if isinstance(field, StreamedField) else field  # noqa: E731
    first = near(times[0])
    gx, gy, speed, inside = field_map(first, [times[0]], box)
    outline(ax, first, gx, gy, inside)
    if on_sphere(first):
        land(ax, first)
    if speed is None:
        return [], None
    speeds = [speed] + [field_map(near(t), [t], box, chunk=gx.size)[2] for t in times[1:]]  # one call a frame
    finite = np.concatenate([s[np.isfinite(s)] for s in speeds])
    top = float(np.percentile(finite, 99)) if finite.size else 0.0
    if not top > 0:
        return [], None
    extent = (gx[0, 0], gx[0, -1], gy[0, 0], gy[-1, 0])
    image = ax.imshow(
        np.ma.masked_invalid(speed), extent=extent, origin="lower", cmap="Greys", alpha=0.5, vmin=0, vmax=top, zorder=1
    )
    image.set_interpolation("nearest")
    units = " (m/s)" if on_sphere(first) else ""
    fig.colorbar(image, ax=ax, label=f"speed{units}", shrink=0.7, extend="max", pad=0.01)
    return speeds, image


def _checked(path: Path) -> Path:
    """`path` as written: an `.mp4` (a `.gif` beside it where no ffmpeg is installed) or `.gif`."""
    suffix = path.suffix.lower()
    if suffix not in (".mp4", ".gif"):
        raise ValueError(f"animate: path {path} must end in .mp4 or .gif")
    if suffix == ".mp4":
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError:
            _log.warning("animation: imageio-ffmpeg is not installed, so %s is written as a GIF", path.name)
            return path.with_suffix(".gif")
    return path


class _frames:
    """A context that takes frames (RGBA arrays of `size`, width and height) and writes them to
    `path`: H.264 through `imageio-ffmpeg`, or a GIF by Pillow (each frame in its own palette)."""

    def __init__(self, path: Path, size: tuple[int, int], fps: int):
        self.path, self.size, self.fps = path, size, fps

    def __enter__(self):
        if self.path.suffix.lower() == ".gif":
            self.images: list = []
            return lambda frame: self.images.append(_gif_frame(frame))
        import imageio_ffmpeg

        self.encoder = imageio_ffmpeg.write_frames(
            str(self.path),
            self.size,
            fps=self.fps,
            codec="libx264",
            pix_fmt_in="rgba",
            pix_fmt_out="yuv420p",
            macro_block_size=2,
        )
        with _no_preexec():
            self.encoder.send(None)  # starts ffmpeg
        return lambda frame: self.encoder.send(np.ascontiguousarray(frame))

    def __exit__(self, *exc):
        if self.path.suffix.lower() == ".gif":
            if exc[0] is None and self.images:
                self.images[0].save(
                    self.path, save_all=True, append_images=self.images[1:], duration=1000 / self.fps, loop=0
                )
        else:
            self.encoder.close()
        return False


@contextlib.contextmanager
def _no_preexec():
    """ffmpeg started without imageio-ffmpeg's `preexec_fn`: a Python function run between fork
    and exec in a process whose JAX runs threads can deadlock (JAX warns of it), and with no such
    function the child is started without running Python in it."""
    was = os.environ.get("IMAGEIO_FFMPEG_NO_PREVENT_SIGINT")
    os.environ["IMAGEIO_FFMPEG_NO_PREVENT_SIGINT"] = "1"
    try:
        yield
    finally:
        if was is None:
            del os.environ["IMAGEIO_FFMPEG_NO_PREVENT_SIGINT"]
        else:
            os.environ["IMAGEIO_FFMPEG_NO_PREVENT_SIGINT"] = was


def _gif_frame(frame: np.ndarray):
    from PIL import Image

    return Image.fromarray(frame[..., :3]).convert("P", palette=Image.Palette.ADAPTIVE)
