"""Progress on stderr for long work (commands, benchmarks, soak scripts).

One helper, ``bar``: a ``tqdm`` bar with counts and rate on stderr. It is silent when
the output is machine-read (``--format json``) and stderr is not a terminal, so piped
JSON stays one clean object and CI logs carry no carriage-return noise.
"""

import contextlib
import contextvars
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: most command runs never draw a bar
    from tqdm import tqdm


def enabled(fmt: str = "text", file=None) -> bool:
    """Whether human progress should be shown for this output format and stream."""
    if os.environ.get("LOOPX_PROGRESS", "").lower() in ("0", "false", "off"):
        return False
    stream = file if file is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return fmt != "json" or tty


def bar(
    iterable=None,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "op",
    fmt: str = "text",
    file=None,
    **kwargs: Any,
) -> "tqdm":
    """A progress bar over ``iterable`` (or ``total`` steps advanced with ``update``)."""
    from tqdm import tqdm

    stream = file if file is not None else sys.stderr
    return tqdm(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        file=stream,
        disable=not enabled(fmt, stream),
        dynamic_ncols=True,
        mininterval=0.5,
        leave=True,  # the final count and rate stay on screen
        **kwargs,
    )


# -- progress from inside services ------------------------------------------------------
# A command sets where progress goes (its output format and stderr) for the duration of
# its run; a service loop wraps its iterable in ``track``. Outside a command (API, tests,
# other services) ``track`` returns the iterable unchanged: services never print.
_sink: contextvars.ContextVar[tuple[str, Any] | None] = contextvars.ContextVar(
    "loopx_progress_sink", default=None
)


@contextlib.contextmanager
def reporting(fmt: str, file=None):
    token = _sink.set((fmt, file if file is not None else sys.stderr))
    try:
        yield
    finally:
        _sink.reset(token)


def track(iterable, *, desc: str, unit: str = "item", total: int | None = None):
    """``iterable`` with a progress bar when a command is reporting, else unchanged."""
    sink = _sink.get()
    if sink is None or not enabled(*sink):
        return iterable
    fmt, stream = sink
    if total is None:
        try:
            total = len(iterable)
        except TypeError:
            total = None
    return bar(iterable, total=total, desc=desc, unit=unit, fmt=fmt, file=stream)


def write(message: str, file=None) -> None:
    """``message`` on ``file`` (stderr), printed above any active bar, not through it."""
    from tqdm import tqdm

    tqdm.write(message, file=file if file is not None else sys.stderr)
