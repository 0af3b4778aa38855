"""Progress on stderr for long work (commands, benchmarks, soak scripts).

One helper, ``bar``. On a terminal it is a ``tqdm`` bar with counts and rate. Anywhere
else (a pipe, a log file, CI) nothing is drawn: a text-format run gets one summary line
when the work ends, and machine-read output (``--format json``) gets nothing, so piped
JSON stays one clean object and logs carry no carriage-return noise.
"""

import contextlib
import contextvars
import os
import sys
import time
from typing import Any


def _off() -> bool:
    return os.environ.get("LOOPX_PROGRESS", "").lower() in ("0", "false", "off")


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def enabled(fmt: str = "text", file=None) -> bool:
    """Whether human progress lines should be shown for this output format and stream:
    text output, or a terminal."""
    if _off():
        return False
    stream = file if file is not None else sys.stderr
    return fmt != "json" or _is_tty(stream)


def drawn(file=None) -> bool:
    """Whether a live bar is drawn on ``file``: only on a terminal."""
    stream = file if file is not None else sys.stderr
    return not _off() and _is_tty(stream)


class _Summary:
    """Stands in for a bar off a terminal: counts silently, then writes one line
    (``desc: done/total unit in 0.4 s``) when closed, if asked to."""

    def __init__(self, iterable, *, total, desc, unit, stream, report: bool):
        self.iterable = iterable
        self.total = total
        self.n = 0
        self.desc = desc
        self.unit = unit
        self.stream = stream
        self.report = report
        self.closed = False
        self.started = time.perf_counter()

    def update(self, n: int = 1) -> None:
        self.n += n

    def __iter__(self):
        try:
            for item in self.iterable:
                yield item
                self.n += 1
        finally:
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if not self.report:
            return
        count = f"{self.n}/{self.total}" if self.total is not None else str(self.n)
        seconds = time.perf_counter() - self.started
        label = f"{self.desc}: " if self.desc else ""
        self.stream.write(f"{label}{count} {self.unit}s in {seconds:.1f} s\n")
        self.stream.flush()


def bar(
    iterable=None,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "op",
    fmt: str = "text",
    file=None,
    **kwargs: Any,
):
    """A progress bar over ``iterable`` (or ``total`` steps advanced with ``update``):
    drawn on a terminal, one closing summary line in text elsewhere, silent for JSON."""
    stream = file if file is not None else sys.stderr
    if not drawn(stream):
        if total is None and iterable is not None:
            try:
                total = len(iterable)
            except TypeError:
                total = None
        return _Summary(
            iterable, total=total, desc=desc, unit=unit, stream=stream, report=enabled(fmt, stream)
        )
    from tqdm import tqdm  # imported on first use: most command runs never draw a bar

    return tqdm(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        file=stream,
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
    stream = file if file is not None else sys.stderr
    if not drawn(stream):
        stream.write(message + "\n")
        stream.flush()
        return
    from tqdm import tqdm

    tqdm.write(message, file=stream)
