"""``memory export``: the Goal's memory as a JSONL stream (docs/export.md)."""

import sys

from loopx_site.core import export
from loopx_site.core.cli import DocumentExit

NAME = "export"
HELP = (
    "Write a Goal's memory as a versioned JSONL stream (docs/export.md) to --output "
    "(default: stdout; with a file, a summary document is printed)."
)


def arguments(parser):
    parser.add_argument("--goal-id", required=True)
    parser.add_argument("--output", default="-", help="A file to write, or - for stdout.")


def run(command, *, goal_id, output="-", **_):
    if output == "-":
        export.resolve_goal(goal_id)  # an unknown Goal is an error before any line
        out = getattr(command.stdout, "_out", sys.stdout)
        export.write(goal_id, out.buffer if hasattr(out, "buffer") else _Text(out))
        out.flush()
        raise DocumentExit(0)
    return _to_file(goal_id, output)


def _to_file(goal_id: str, output: str) -> dict:
    import os

    export.resolve_goal(goal_id)
    partial = f"{output}.partial"
    try:
        with open(partial, "wb") as out:
            summary = export.write(goal_id, out)
        os.replace(partial, output)
    except OSError as exc:
        from loopx_site.core.errors import DomainError

        raise DomainError(
            "invalid_argument", f"cannot write `output` ({exc.strerror})", field="output"
        ) from None
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return {**summary, "output": os.path.basename(output)}


class _Text:
    """A text stream (a test's ``StringIO``) taking the export's bytes."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, data: bytes) -> None:
        self.stream.write(data.decode("utf-8"))
