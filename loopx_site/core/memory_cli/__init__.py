"""``manage.py memory …`` subcommands, one module each
(``loopx_site.core.cli.add_subcommand_modules``), thin adapters over
``loopx_site.core.export``."""
