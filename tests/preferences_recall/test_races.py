"""Racing writers of the hook's runtime state settle to one row with idempotent results."""

import threading

import pytest
from django.db import connection

from preferences import services
from preferences.documents import extensions as extension_documents
from preferences.models import ProviderExtension, ProviderNote
from tests.preferences_recall.conftest import manifest, provider


def _race(n: int, work) -> list:
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work()
        except Exception as exc:  # pragma: no cover - reported by the assertion
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("n", [2, 8])
def test_racing_installs_of_one_manifest_install_it_once(write_json, n):
    path = write_json("m.json", manifest("alpha", provider("valid")))
    results = _race(
        n,
        lambda: extension_documents.operation(
            services.install_extension(manifest_path=path, execute=True)
        ),
    )
    applied = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if not isinstance(r, dict)]
    assert [r["status"] for r in applied] == ["applied"], results
    assert [getattr(r, "code", r) for r in refused] == ["extension_installed"] * (n - 1)
    assert ProviderExtension.objects.count() == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_racing_saves_of_one_note_create_it_once():
    results = _race(
        8,
        lambda: services.save_provider_note(project="p", note_id="n1", summary="Use tables."),
    )
    statuses = sorted(r["status"] for r in results)
    assert statuses == ["created"] + ["unchanged"] * 7, results
    assert ProviderNote.objects.count() == 1
