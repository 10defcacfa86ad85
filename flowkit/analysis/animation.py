"""Animations of a run: the particles frame by frame over the field's speed at each saved time
(the surface of an ocean file), the domain's outline and the land, each status in its own colour,
the date or time of each frame, written as an MP4 by the ffmpeg that `imageio-ffmpeg` ships in
its wheel (no system binary), or as a GIF by Pillow.

The figure is laid out and drawn by matplotlib once, without what moves; each frame is then
composed in NumPy from that picture: the speed beneath its lines and land (`_SpeedLayer`), the
label by Pillow in matplotlib's font, and the particles as squares of pixels (matplotlib's
scatter draws each marker as a path: 0.1 s a frame for 10⁴ particles; its image and text
drawing cost 15 ms a frame), so a frame costs a few milliseconds, most of it the encoder's."""

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
    speeds, extent, top = _speeds(fig, ax, field, times[shown], box)
    present = sorted({int(code) for code in np.unique(status)} - {int(Status.NOT_RELEASED)})
    handles = [
        Line2D([], [], ls="none", marker="o", ms=4, color=colours[c], label=Status(c).name.lower().replace("_", " "))
        for c in present
    ]
    if handles:
        ax.legend(handles=handles, loc="upper right", fontsize=7)
    axes(ax, field, box)
    # the figure's title: an axes title over a map held to its aspect can end above the figure
    fig.suptitle(f"{len(rows)} of {n} particles{projection(xy, field)}", fontsize=9)
    still, beneath = _stills(fig, ax)
    label = _Label(fig, ax)
    layer = None if extent is None else _SpeedLayer(ax, still, beneath, extent, speeds[0].shape, top)
    width, height = fig.canvas.get_width_height()
    size = (width - width % 2, height - height % 2)  # H.264 takes even sides
    pixels = ax.transData.transform(xy.reshape(-1, 2)).reshape(xy.shape)
    inside = np.array(ax.bbox.extents)  # x0, y0, x1, y1 in pixels from the bottom left
    rgba = np.round(colours * 255).astype(np.uint8)
    rgba[:, 3] = 255
    try:
        with _frames(path, size, fps) as write:
            for k in tqdm(range(len(shown)), desc="animation", unit="frame", disable=not progress):
                frame = still.copy()
                if layer is not None:
                    layer.draw(frame, speeds[k])
                label.draw(frame, when(origin, times[shown[k]]))
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
    """The field's speed on `field_map`'s grid at each of `times`, the grid's extent and the
    speed at the top of the grey scale (the 99th percentile over all frames, with its colour
    bar), with the domain's outline and, on a sphere, the land; `([], None, 0.0)` without a
    field or where the picture shows no speed (a 3-D plane view, water at rest)."""
    if field is None:
        return [], None, 0.0
    first = field.near(times[0]) if isinstance(field, StreamedField) else field
    gx, gy, speeds, inside = field_map(field, times, box, per_time=True)
    outline(ax, first, gx, gy, inside)
    if on_sphere(first):
        land(ax, first)
    if speeds is None:
        return [], None, 0.0
    finite = speeds[np.isfinite(speeds)]
    top = float(np.percentile(finite, 99)) if finite.size else 0.0
    if not top > 0:
        return [], None, 0.0
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import ListedColormap, Normalize

    units = " (m/s)" if on_sphere(first) else ""
    scale = ScalarMappable(Normalize(0.0, top), ListedColormap(_SpeedLayer.greys() / 255.0))
    fig.colorbar(scale, ax=ax, label=f"speed{units}", shrink=0.7, extend="max", pad=0.01)
    return speeds, (gx[0, 0], gx[0, -1], gy[0, 0], gy[-1, 0]), top


def _stills(fig, ax) -> tuple[np.ndarray, np.ndarray]:
    """The figure laid out and drawn once, without what moves: as shown (the axes white) and
    with the axes black, from which two the speed beneath the lines and the land is composed."""
    ax.set_facecolor("white")
    fig.canvas.draw()
    fig.set_layout_engine("none")
    still = np.array(fig.canvas.buffer_rgba())
    ax.set_facecolor("black")
    ax.draw(fig.canvas.get_renderer())  # the axes again, over black (what lies outside them is not used)
    beneath = np.array(fig.canvas.buffer_rgba())
    ax.set_facecolor("white")
    return still, beneath


class _Label:
    """Each frame's date or time at the axes' top left, in matplotlib's font at 9 points, drawn
    into the frame by Pillow (matplotlib lays out and renders a text anew on every draw: 3 ms,
    a tenth of a frame)."""

    def __init__(self, fig, ax):
        from matplotlib import font_manager
        from PIL import ImageFont

        self.font = ImageFont.truetype(font_manager.findfont(font_manager.FontProperties()), round(9 * fig.dpi / 72))
        x0, _, x1, y1 = ax.bbox.extents
        height = fig.canvas.get_width_height()[1]
        self.corner = (int(x0 + 0.02 * (x1 - x0)), int(height - y1 + 0.03 * (ax.bbox.height)))

    def draw(self, frame: np.ndarray, text: str) -> None:
        from PIL import Image, ImageDraw

        *_, right, bottom = self.font.getbbox(text)
        x, y = self.corner
        region = frame[y : y + bottom + 2, x : x + right + 2]
        image = Image.fromarray(region)
        ImageDraw.Draw(image).text((0, 0), text, font=self.font, fill=(26, 26, 26, 255))
        region[...] = np.asarray(image)


class _SpeedLayer:
    """The speed in grey (matplotlib's `Greys` at half opacity on white) put beneath everything
    the axes show, composed in NumPy on the frame: with the picture drawn on white (`still`) and
    on black (`beneath`), a pixel over a background `p` is `beneath + (still - beneath) · p / 255`
    (what lies above has drawn `beneath`, and lets `(still - beneath) / 255` of the background
    through): most pixels have nothing above and are `p`, those hidden whole (land) keep the
    still. Each pixel of the axes takes the speed of the grid cell its centre lies in, as
    `imshow(..., interpolation="nearest")` over the grid's extent would; no speed (land,
    outside) leaves it white."""

    def __init__(self, ax, still: np.ndarray, beneath: np.ndarray, extent, shape: tuple[int, int], top: float):
        height = still.shape[0]
        x0, y0, x1, y1 = ax.bbox.extents
        columns = np.arange(int(np.ceil(x0)), int(np.floor(x1)))
        rows = np.arange(int(np.ceil(height - y1)), int(np.floor(height - y0)))  # from the top
        to_data = ax.transData.inverted()
        x = to_data.transform(np.stack([columns + 0.5, np.full(columns.shape, y0)], axis=1))[:, 0]
        y = to_data.transform(np.stack([np.full(rows.shape, x0), height - rows - 0.5], axis=1))[:, 1]
        ny, nx = shape
        i = np.floor((x - extent[0]) / (extent[1] - extent[0]) * nx).astype(np.int64)
        j = np.floor((y - extent[2]) / (extent[3] - extent[2]) * ny).astype(np.int64)
        outside = ((j < 0) | (j >= ny))[:, None] | ((i < 0) | (i >= nx))[None, :]
        cell = np.where(outside, ny * nx, j[:, None] * nx + i[None, :]).ravel()  # past the last cell: no speed
        width = still.shape[1]
        at = (rows[:, None] * width + columns[None, :]).ravel()  # the pixels of the axes, flat
        on_white, on_black = still.reshape(-1, 4)[at, :3], beneath.reshape(-1, 4)[at, :3]
        bare = np.all(on_white == 255, axis=1) & np.all(on_black == 0, axis=1)  # nothing drawn above
        through = np.clip(on_white.astype(np.int32) - on_black, 0, 255)
        partly = ~bare & np.any(through > 0, axis=1)  # lines and text, not what hides all
        self.bare_at, self.bare_cell = at[bare], cell[bare].astype(np.int32)
        self.partly_at, self.partly_cell = at[partly], cell[partly].astype(np.int32)
        self.beneath = on_black[partly].astype(np.uint16)
        self.through = through[partly].astype(np.uint16)
        rgb = np.concatenate([self.greys(), [[255, 255, 255]]]).astype(np.uint8)
        self.colours = np.concatenate([rgb, np.full((len(rgb), 1), 255, np.uint8)], axis=1).view(np.uint32)[:, 0]
        self.top = top

    @staticmethod
    def greys() -> np.ndarray:
        """`Greys`' 256 colours at half opacity over white, as 0–255 RGB."""
        from matplotlib import colormaps

        return np.round(255 * (0.5 + 0.5 * colormaps["Greys"](np.linspace(0, 1, 256))[:, :3]))

    def draw(self, frame: np.ndarray, speed: np.ndarray) -> None:
        """The frame of `speed` (on the grid) composed into the RGBA `frame` (contiguous)."""
        level = np.clip(np.nan_to_num(speed / self.top * 255.0 + 0.5, nan=256.0), 0, 256).astype(np.int32)
        colour = np.append(self.colours[level.ravel()], self.colours[256])
        pixels = frame.view(np.uint32).reshape(-1)
        pixels[self.bare_at] = colour[self.bare_cell]
        below = colour[self.partly_cell].view(np.uint8).reshape(-1, 4)[:, :3].astype(np.uint16)
        frame.reshape(-1, 4)[self.partly_at, :3] = self.beneath + (self.through * below + 127) // 255


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
            output_params=["-preset", "veryfast"],  # the medium preset encodes slower than frames come
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
