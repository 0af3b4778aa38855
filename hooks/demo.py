def load(*, log) -> dict:
    return {}
