"""What the apps contribute to the kernel, without the kernel naming an app.

The kernel defines named extension points here; each app registers its callables in its
``AppConfig.ready()``. The kernel only iterates over what was registered and never imports
an app or looks a model up by label, so every edge runs app -> kernel and import-linter
sees it.

An extension point is a small ordered table ``key -> callable``: the key names the
contribution (``"reward_memory.corpus_health"``), registering the same key twice fails at
start-up (two apps claiming one name is a wiring error, not something to paper over), and
iteration follows registration order, which follows ``INSTALLED_APPS``.

Usage, in an app's ``apps.py`` (``lazy`` names the callable by its dotted path and imports
it on its first call, so ``ready()`` — run by every short CLI call — stays cheap)::

    def ready(self):
        from loopx_site.core import contributions

        contributions.DASHBOARD_PANELS.register(
            "reward_memory.experiments", contributions.lazy("reward_memory.dashboard.experiments")
        )
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.utils.module_loading import import_string


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


@dataclass(frozen=True)
class Lazy:
    """A callable named by its dotted path, imported on its first call."""

    path: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return import_string(self.path)(*args, **kwargs)


def lazy(path: str) -> Lazy:
    """``path`` (``"app.module.function"``) as a callable that imports it when first called."""
    return Lazy(path)


@dataclass(frozen=True)
class DashboardRead:
    """What one dashboard section read: ``goals`` maps each Goal id the section has rows
    for to the keys it adds to that Goal's part of the page (a Goal with rows but no
    Agent still gets a part); ``empty`` are the keys of a Goal without rows; ``page`` the
    keys it adds to the page itself; ``for_goal(goal_id)`` (optional) keys every Goal gets
    whether or not it has rows."""

    goals: dict[str, dict[str, Any]]
    empty: dict[str, Any] = field(default_factory=dict)
    page: dict[str, Any] = field(default_factory=dict)
    for_goal: Callable[[str], dict[str, Any]] | None = None


@dataclass(frozen=True)
class DashboardSection:
    """One app's section of the operator dashboard, by dotted paths (imported when the
    page is drawn): ``read() -> DashboardRead`` (one query per panel, identifiers, counts,
    codes, states and timestamps only), and ``link(request, data)``, which adds the
    admin links of that section to the assembled page ``data`` in place. ``permissions``:
    the view permissions the section's counts need (the page refuses an account without
    every one)."""

    read: str
    link: str
    permissions: tuple[str, ...] = ()

    def __call__(self) -> DashboardRead:
        return import_string(self.read)()

    def add_links(self, request, data: dict[str, Any]) -> None:
        import_string(self.link)(request, data)


#: Sections of the operator dashboard: ``DashboardSection`` (see
#: ``loopx_site.core.dashboard_selectors``).
DASHBOARD_SECTIONS = ExtensionPoint(
    "dashboard_sections", "operator dashboard sections: DashboardSection(read, link, permissions)"
)

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

#: Reviewed soft preferences the local semantic-preference provider also ranks:
#: ``source(project, goal_id=, agent_id=) -> documents`` (Reward Memory's privacy selector).
#: The provider uses the first one registered; none registered turns it off.
SOFT_PREFERENCE_SOURCES = ExtensionPoint(
    "soft_preference_sources", "reviewed soft preferences: callable(project, *, goal_id, agent_id)"
)

#: Checks a Goal registration runs before it moves the Goal's scope fields (``state_ref``,
#: ``instance_id``): ``check(goal=goal, target=dict(state_ref=…, instance_id=…))`` raises a
#: ``DomainError`` to refuse the move (preview and commit alike). The preference journal
#: refuses a return to a scope whose subjects were migrated on.
GOAL_SCOPE_MOVES = ExtensionPoint(
    "goal_scope_moves", "refuse a Goal's state_ref/instance_id move: check(goal, target)"
)

#: Retention pruners (``loopx_site.core.retention``): ``prune(*, policy, older_than, execute)
#: -> {table label: rows}`` for one policy name of ``settings.LOOPX_RETENTION_DAYS``
#: (``receipts``, ``outbox``, ``dispatches``, ``background_runs``); the key is
#: ``"<app>.<policy>"``. A pruner removes only rows no replay or audit still needs.
RETENTION = ExtensionPoint(
    "retention", "prune rows older than a policy's cutoff: prune(policy, older_than, execute)"
)

#: State series of ``/metrics``, read from the database at scrape time
#: (``loopx_site.core.metrics``): ``gauge() -> [(name, help, {((label, value), ...): number})]``.
METRICS_GAUGES = ExtensionPoint(
    "metrics_gauges", "scrape-time state series: callable() -> [(name, help, samples)]"
)

#: What waits for a human, shown on the admin index and the dashboard
#: (``loopx_site.core.admin_site``): ``todo(request) -> [{"label", "count", "url"}]``.
REVIEW_TODO = ExtensionPoint("review_todo", "admin to-do rows: callable(request) -> [rows]")

#: A Goal's memory as export sections (``loopx_site.core.export``, docs/export.md):
#: ``sections(goal) -> [export.Section, ...]``; the key is ``"<app>.<what>"``. ``goal`` may
#: be unsaved (an import names the Goal before it exists): use it only inside ``rows``.
GOAL_EXPORT = ExtensionPoint(
    "goal_export", "a Goal's memory as JSONL export sections: sections(goal) -> [Section]"
)
