"""``local_preference_provider reindex``: rebuild one project's note index."""

NAME = "reindex"
HELP = "Rebuild one project's note index."


def arguments(parser):
    parser.add_argument("--project", required=True)
    parser.add_argument("--execute", action="store_true")


def run(command, *, project, execute, **_):
    from preferences.recall import local_provider

    return local_provider.reindex_project(project=project, execute=execute)
