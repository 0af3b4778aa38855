"""The demo loaders' one rule: create what is missing, never change what exists.

Every demo loader names the objects it stands for and hands each to ``Ledger.ensure``:
an object that exists is ``kept`` — its creator is not called, so an operator's moved
``state_ref``, retired preference, revoked checkpoint, disabled extension or rotated
password stays exactly as the operator left it; a missing one is created and reported
``created``. A loader's document carries ``status`` (``created`` when it created
anything, else ``kept``) and ``objects`` (name → ``created`` | ``kept``), in JSON and in
``--format text`` alike.

Adding a demo object is one call::

    ledger.ensure("todo demo/demo-write-tests",
                  exists=Todo.objects.filter(...).exists,
                  create=lambda: services.add_todo(..., execute=True))
"""

from collections.abc import Callable
from typing import Any

CREATED = "created"
KEPT = "kept"


class Ledger:
    """What one demo loader did, object by object."""

    def __init__(self) -> None:
        self.objects: dict[str, str] = {}

    def ensure(
        self, name: str, *, exists: bool | Callable[[], bool], create: Callable[[], Any]
    ) -> Any:
        """``create()`` only when the object does not exist; returns its result, or
        ``None`` when the object was kept."""
        if exists() if callable(exists) else exists:
            self.objects[name] = KEPT
            return None
        result = create()
        self.objects[name] = CREATED
        return result

    def record(self, name: str, *, created: bool) -> str:
        """Note an object whose creation the loader decided itself."""
        self.objects[name] = CREATED if created else KEPT
        return self.objects[name]

    def created(self, name: str) -> bool:
        return self.objects.get(name) == CREATED

    @property
    def status(self) -> str:
        return CREATED if CREATED in self.objects.values() else KEPT

    def summary(self) -> str:
        """``"2 created, 3 kept"`` (for the loader's log line)."""
        values = list(self.objects.values())
        return f"{values.count(CREATED)} created, {values.count(KEPT)} kept"

    def document(self, **fields: Any) -> dict[str, Any]:
        return {"status": self.status, **fields, "objects": dict(self.objects)}
