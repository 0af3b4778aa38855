"""Demo data of the recall hook: the installed ``loopx-local`` extension and a config."""


def load(*, log) -> dict:
    return {}
