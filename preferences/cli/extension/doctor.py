"""``semantic_preference extension doctor``."""

from loopx_site.core.cli import format_mapping

NAME = "doctor"
HELP = (
    "LoopX's extension doctor of one installed extension or --all-enabled "
    "(read-only; --execute runs the doctor)."
)
render = format_mapping


def arguments(parser) -> None:
    parser.add_argument("extension_id", nargs="?")
    parser.add_argument("--all-enabled", action="store_true")
    parser.add_argument("--execute", action="store_true", help="Run the doctor probe.")


def run(command, *, extension_id, all_enabled, execute, **_):
    from preferences import services
    from preferences.documents import extensions as documents

    return documents.doctor_run(
        services.doctor_extension(
            extension_id=extension_id, all_enabled=all_enabled, execute=execute
        )
    )
