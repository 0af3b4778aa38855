"""``semantic_preference extension enable``."""

from preferences.cli.extension.common import PREVIEW, extension_arguments, render_extension

NAME = "enable"
HELP = "Enable an installed extension." + PREVIEW
arguments = extension_arguments
render = render_extension


def run(command, *, extension_id, execute, **_):
    from preferences import services
    from preferences.documents import extensions as documents

    return documents.operation(
        services.activate_extension(extension_id=extension_id, execute=execute)
    )
