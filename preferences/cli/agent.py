from loopx_site.core.cli import Subcommands


def register(sub: Subcommands) -> None:
    pass
