"""A relevance set for the local provider's ranking: natural queries a person would type,
each with the one record that person would pick, over the demo's records and a small
corpus of Issue Fix / turn-admission memories written like the ones owners give.

Used by ``bench/relevance_bench.py`` (top-3 rate before and after the English analyzer)
and by ``tests/core/test_relevance.py`` (the analyzer never does worse than before).
"""

#: ref → record text (summary as a memory record carries it).
RECORDS = {
    # The demo's records (reward_memory/demo.py).
    "demo-reread-criteria": "Before starting a new Todo, re-read its acceptance criteria and "
    "the last validation result instead of relying on the previous turn summary.",
    "demo-finish-in-progress": "Prefer finishing an in-progress Todo over opening a new one "
    "when the quota leaves room for a single turn.",
    "demo-failing-reproduction": "Ask for a failing reproduction before patching a storage "
    "contract.",
    "demo-short-descriptions": "Keep PR descriptions under twenty lines; link follow-up work "
    "instead of describing it.",
    "demo-issue-in-title": "Mention the issue number in the PR title.",
    # Issue Fix habits.
    "tests-first": "Write the regression test before the fix and show it failing in the PR.",
    "small-patches": "Keep patches small: one behaviour change per pull request.",
    "changelog": "Add a changelog entry for every user-visible change.",
    "no-force-push": "Never force-push to a branch a reviewer has already commented on.",
    "rebase-main": "Rebase on main before asking for review; do not merge main into the branch.",
    "squash-commits": "Squash fixup commits before the final review.",
    "commit-message": "Commit messages start with the area in brackets and use the imperative "
    "mood.",
    "designated-reviewer": "Ask the designated reviewer before merging anything that touches "
    "the storage layer.",
    "ci-green": "Do not request review while continuous integration is failing.",
    "flaky-tests": "When a test is flaky, quarantine it with a linked issue instead of "
    "retrying the pipeline.",
    "benchmarks": "Attach benchmark numbers when a change touches a hot path.",
    "screenshots": "Include before and after screenshots for user interface changes.",
    "docs-update": "Update the documentation in the same pull request as the behaviour change.",
    "deprecations": "Deprecate a public option for one release before removing it.",
    "error-messages": "Error messages name the field the caller sent and say how to fix it.",
    "logging-secrets": "Never log tokens, passwords or full request bodies.",
    "dependency-pins": "Pin new dependencies to an exact version in the requirements file.",
    "migration-review": "Database migrations need a second reviewer and a rollback note.",
    "type-hints": "New functions get type hints and a docstring stating their contract.",
    "review-latency": "Answer review comments within one working day or say when you will.",
    "draft-pr": "Open the pull request as a draft until the tests pass locally.",
    "linked-followups": "File follow-up issues for out-of-scope findings and link them from "
    "the description.",
    "reproduce-locally": "Reproduce a reported bug locally before proposing a fix.",
    "security-reports": "Security reports go to the private tracker, never to public issues.",
    "release-notes": "Release notes list breaking changes first.",
    # Turn admission.
    "quota-low": "When the remaining quota allows only one turn, finish the current Todo "
    "rather than starting another.",
    "stale-summary": "Do not trust a summary from a resumed session; read the Todo state again.",
    "blocked-todo": "Mark a Todo blocked with the reason when it waits on a person.",
    "replan": "Record a replan when the acceptance criteria change mid-way.",
    "validation-command": "Run the Todo's validation command before marking it completed.",
}

#: (natural query, the record a person would pick).
QUERIES = [
    ("how long should the PR description be", "demo-short-descriptions"),
    ("PR description length", "demo-short-descriptions"),
    ("where do I put the issue number", "demo-issue-in-title"),
    ("what goes in the pull request title", "demo-issue-in-title"),
    ("should I write tests before fixing", "tests-first"),
    ("regression tests failing first", "tests-first"),
    ("how big should patches be", "small-patches"),
    ("changelog entries", "changelog"),
    ("can I force push after review comments", "no-force-push"),
    ("merging main into my branch", "rebase-main"),
    ("squashing commits", "squash-commits"),
    ("how to write commit messages", "commit-message"),
    ("who reviews storage changes before merge", "designated-reviewer"),
    ("requesting reviews when CI fails", "ci-green"),
    ("flaky test retries", "flaky-tests"),
    ("benchmarking hot paths", "benchmarks"),
    ("screenshots for UI changes", "screenshots"),
    ("documentation updates", "docs-update"),
    ("removing a deprecated option", "deprecations"),
    ("writing error messages", "error-messages"),
    ("logging passwords", "logging-secrets"),
    ("pinning dependencies", "dependency-pins"),
    ("reviewing database migrations", "migration-review"),
    ("docstrings and type hints", "type-hints"),
    ("replying to reviewers", "review-latency"),
    ("draft pull requests", "draft-pr"),
    ("out of scope findings", "linked-followups"),
    ("reproducing bugs", "reproduce-locally"),
    ("reporting security problems", "security-reports"),
    ("breaking changes in release notes", "release-notes"),
    ("only one turn left in the quota", "quota-low"),
    ("resumed sessions and stale summaries", "stale-summary"),
    ("todo waiting on someone", "blocked-todo"),
    ("acceptance criteria changed", "replan"),
    ("validating before completing a todo", "validation-command"),
    ("patching storage contracts", "demo-failing-reproduction"),
    ("starting a new todo", "demo-reread-criteria"),
]
