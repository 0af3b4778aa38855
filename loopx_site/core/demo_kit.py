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

import inspect
import secrets
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.module_loading import import_string

from loopx_site.core import progress

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


# -- ``manage.py loopx_demo`` ------------------------------------------------------------
def _label(dotted: str) -> str:
    """``hooks.demo.load`` → ``hooks``; ``preferences.demo_recall.load`` →
    ``preferences.demo_recall`` (one key per loader, none overwritten)."""
    module = dotted.rsplit(".", 1)[0]
    return module.removesuffix(".demo")


def load_all(*, log: Callable[[str], None], operator: str | None = None) -> dict[str, Any]:
    """Run every loader of ``settings.LOOPX_DEMO_LOADERS``, each in its own transaction.
    A loader that takes ``operator`` makes that account the holder of the demo's operator
    authority (Reward Memory: the corpus owner)."""
    loaded = {}
    for dotted in progress.track(list(settings.LOOPX_DEMO_LOADERS), desc="demo", unit="loader"):
        loader = import_string(dotted)
        kwargs: dict[str, Any] = {"log": log}
        if "operator" in inspect.signature(loader).parameters:
            kwargs["operator"] = operator
        with transaction.atomic():
            loaded[_label(dotted)] = loader(**kwargs)
    return loaded


def seed_operator(username: str, *, reset: bool) -> dict[str, Any]:
    """Create the local operator (a superuser) once with a fresh password; later calls
    keep it and its password unless ``reset`` sets a new one. The password is returned
    only when it was just set."""
    user_model = get_user_model()
    with transaction.atomic():
        user, created = user_model.objects.get_or_create(
            username=username, defaults={"is_staff": True, "is_superuser": True}
        )
        if not (created or reset):
            return {
                "username": username,
                "status": "kept",
                "password": None,
                "hint": "password unchanged; `make reset-operator-password` sets a new one",
            }
        password = secrets.token_urlsafe(12)
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
    return {
        "username": username,
        "status": "created" if created else "password_reset",
        "password": password,
        "hint": "shown once; keep it",
    }
