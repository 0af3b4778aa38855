"""What the apps contribute to the kernel, without the kernel naming an app.

The kernel defines named extension points here; each app registers its callables in its
``AppConfig.ready()``. The kernel only iterates over what was registered and never imports
an app or looks a model up by label, so every edge runs app -> kernel and import-linter
sees it.

An extension point is a small ordered table ``key -> callable``: the key names the
contribution (``"reward_memory.corpus_health"``), registering the same key twice fails at
start-up (two apps claiming one name is a wiring error, not something to paper over), and
iteration follows registration order, which follows ``INSTALLED_APPS``.

Usage, in an app's ``apps.py``::

    def ready(self):
        from loopx_site.core import contributions
        from reward_memory import dashboard

        contributions.DASHBOARD_PANELS.register("reward_memory.corpora", dashboard.corpora)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


class ContributionError(RuntimeError):
    """A wiring mistake at start-up (a key registered twice, or an unknown key asked for)."""


@dataclass
class ExtensionPoint:
    """One named, ordered table of contributed callables."""

    name: str
    doc: str
    _entries: dict[str, Callable[..., Any]] = field(default_factory=dict, repr=False)

    def register(self, key: str, function: Callable[..., Any]) -> Callable[..., Any]:
        if key in self._entries and self._entries[key] is not function:
            raise ContributionError(f"{self.name}: {key!r} is registered twice")
        self._entries[key] = function
        return function

    def get(self, key: str) -> Callable[..., Any]:
        try:
            return self._entries[key]
        except KeyError:
            raise ContributionError(f"{self.name}: nothing registered as {key!r}") from None

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[tuple[str, Callable[..., Any]]]:
        return iter(list(self._entries.items()))

    def __len__(self) -> int:
        return len(self._entries)


#: Panels of the operator dashboard: ``panel(goal_ids) -> panel data`` (see
#: ``loopx_site.core.admin_dashboard``).
DASHBOARD_PANELS = ExtensionPoint(
    "dashboard_panels", "operator dashboard panels: callable(goal_ids) -> panel"
)

#: Everything an app keeps for a Goal (or one Agent of it) that an erasure must remove or an
#: export must carry: ``contributor(goal, agent=None, ...)``. Filled by the apps that own
#: such content; the kernel's ``goal erase`` / ``memory export`` iterate over it.
GOAL_CONTENT = ExtensionPoint(
    "goal_content", "per-app erasure/export of one Goal's (or one Agent's) content"
)

#: State series of ``/metrics``, read from the database at scrape time
#: (``loopx_site.core.metrics``): ``gauge() -> [(name, help, {((label, value), ...): number})]``.
METRICS_GAUGES = ExtensionPoint(
    "metrics_gauges", "scrape-time state series: callable() -> [(name, help, samples)]"
)

#: What waits for a human, shown on the admin index and the dashboard
#: (``loopx_site.core.admin_site``): ``todo(request) -> [{"label", "count", "url"}]``.
REVIEW_TODO = ExtensionPoint("review_todo", "admin to-do rows: callable(request) -> [rows]")
