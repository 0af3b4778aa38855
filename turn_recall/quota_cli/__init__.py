"""``manage.py quota …``: one module per subcommand
(``loopx_site.core.cli.add_subcommand_modules``)."""
