"""``manage.py reward_memory …``: one module per subcommand (``NAME``, ``HELP``,
``arguments``, ``run`` and optionally ``render`` / ``exit_status``; see
``loopx_site.core.cli.add_subcommand_modules``), each a thin adapter over
``reward_memory.services``. The command lists them in
``reward_memory/management/commands/reward_memory.py``."""
