"""``semantic_preference extension disable``."""

from preferences.cli.extension.common import PREVIEW, extension_arguments, render_extension

NAME = "disable"
HELP = "Disable an installed extension." + PREVIEW
arguments = extension_arguments
render = render_extension


def run(command, *, extension_id, execute, **_):
    from loopx_site.core import access
    from preferences import services
    from preferences.documents import extensions as documents

    return documents.operation(
        services.deactivate_extension(
            extension_id=extension_id, execute=execute, operator=access.SHELL
        )
    )
