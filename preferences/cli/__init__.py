"""``manage.py semantic_preference …``: one module per subcommand, the ``agent`` and
``extension`` groups one package each (``loopx_site.core.cli.add_subcommand_modules``).
Parse → one service call → render. ``--config CFG`` is a local-private config file (git
must ignore it; the only place besides an installed extension a provider command may come
from) or the name of an operator-registered config (run with its owner Goal as scope)."""
