"""``semantic_preference extension upgrade``."""

from preferences.cli.extension.common import PREVIEW, manifest_arguments, render_extension

NAME = "upgrade"
HELP = "Install a new revision of an installed extension." + PREVIEW
arguments = manifest_arguments
render = render_extension


def run(command, *, manifest, execute, **_):
    from preferences import services
    from preferences.documents import extensions as documents

    return documents.operation(services.upgrade_extension(manifest_path=manifest, execute=execute))
