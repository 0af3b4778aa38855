"""``semantic_preference extension activate``: LoopX's alias of ``enable``."""

from preferences.cli.extension import enable
from preferences.cli.extension.common import PREVIEW

NAME = "activate"
HELP = "Alias of enable." + PREVIEW
arguments, run, render = enable.arguments, enable.run, enable.render
