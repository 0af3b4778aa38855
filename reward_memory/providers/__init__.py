"""Provider registry: ``get(provider_id)`` returns the provider a corpus is bound to.

Built in: ``local`` (the embedded default) and ``openviking`` (an HTTP adapter; until
``OPENVIKING_BASE_URL`` and ``OPENVIKING_USER_ID`` are set its calls fail open as
``not_installed``). ``use(provider_id, provider)`` installs
another implementation for the duration of a ``with`` block (tests install the double
as ``double``; the OpenViking adapter registers itself with ``register``).
"""

import contextlib
import threading
from collections.abc import Iterator

from reward_memory.providers.base import (
    FAILURE_KINDS,
    Binding,
    CanaryResult,
    Preflight,
    Provider,
    ProviderUnavailable,
    ProviderWrite,
    RecallItem,
    WriteResult,
    binding_ref,
)
from reward_memory.providers.local import LocalProvider
from reward_memory.providers.openviking import OpenVikingProvider

__all__ = [
    "FAILURE_KINDS",
    "KNOWN_PROVIDER_IDS",
    "Binding",
    "CanaryResult",
    "Preflight",
    "Provider",
    "ProviderUnavailable",
    "ProviderWrite",
    "RecallItem",
    "WriteResult",
    "binding_ref",
    "get",
    "register",
    "use",
]

# Ids a corpus may name. A known id without an installed implementation is a fail-open
# ``not_installed`` condition (setup guidance), never an error of the caller's work.
KNOWN_PROVIDER_IDS = ("local", "openviking", "double")

_lock = threading.Lock()
_registry: dict[str, Provider] = {"local": LocalProvider(), "openviking": OpenVikingProvider()}


def get(provider_id: str) -> Provider:
    provider = _registry.get(provider_id)
    if provider is None:
        raise ProviderUnavailable("not_installed")
    return provider


def register(provider_id: str, provider: Provider) -> None:
    with _lock:
        _registry[provider_id] = provider


@contextlib.contextmanager
def use(provider_id: str, provider: Provider) -> Iterator[Provider]:
    with _lock:
        previous = _registry.get(provider_id)
        _registry[provider_id] = provider
    try:
        yield provider
    finally:
        with _lock:
            if previous is None:
                _registry.pop(provider_id, None)
            else:
                _registry[provider_id] = previous
