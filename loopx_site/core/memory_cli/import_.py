"""``memory import``: load an export stream into this instance (preview unless
``--execute``; conditional and idempotent — docs/export.md)."""

import sys

from loopx_site.core import export
from loopx_site.core.cli import add_execute_argument
from loopx_site.core.errors import DomainError

NAME = "import"
HELP = (
    "Load a memory export (docs/export.md): creates what is missing, leaves what is equal, "
    "refuses the whole stream when this instance holds other content under a key it "
    "carries. Previews unless --execute."
)


def arguments(parser):
    parser.add_argument("--input", required=True, help="An export file, or - for stdin.")
    add_execute_argument(parser)


def run(command, *, input, execute=False, **_):
    if input == "-":
        return export.load(getattr(sys.stdin, "buffer", sys.stdin), execute=execute)
    try:
        source = open(input, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise DomainError(
            "invalid_input_file", f"cannot read `input` ({exc.strerror})", field="input"
        ) from None
    with source:
        return export.load(source, execute=execute)
