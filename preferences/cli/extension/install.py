"""``semantic_preference extension install``."""

from preferences.cli.extension.common import PREVIEW, manifest_arguments, render_extension

NAME = "install"
HELP = "Install a provider extension (TOML or JSON manifest)." + PREVIEW
arguments = manifest_arguments
render = render_extension


def run(command, *, manifest, execute, **_):
    from preferences import services
    from preferences.documents import extensions as documents

    return documents.operation(services.install_extension(manifest_path=manifest, execute=execute))
