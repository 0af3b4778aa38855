"""``manage.py local_preference_provider …``: one module per subcommand
(``loopx_site.core.cli.add_subcommand_modules``)."""
