"""``semantic_preference extension deactivate``: LoopX's alias of ``disable``."""

from preferences.cli.extension import disable
from preferences.cli.extension.common import PREVIEW

NAME = "deactivate"
HELP = "Alias of disable." + PREVIEW
arguments, run, render = disable.arguments, disable.run, disable.render
