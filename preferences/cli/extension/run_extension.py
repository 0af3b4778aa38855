"""``semantic_preference extension run``."""

from loopx_site.core.cli import format_mapping

NAME = "run"
HELP = (
    "LoopX's run of a standalone extension: every extension here is a capability "
    "provider, so it is refused as LoopX refuses it (use recall)."
)
render = format_mapping


def arguments(parser) -> None:
    parser.add_argument("extension_id")
    parser.add_argument("--input-json", required=True, help="Request JSON file, or - for stdin.")
    parser.add_argument("--execute", action="store_true")


def run(command, *, extension_id, input_json, execute, **_):
    from preferences import services

    return services.run_extension(extension_id=extension_id, input_json=input_json, execute=execute)
