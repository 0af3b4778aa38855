from django.urls import path

from reward_memory.api import views

# (path under reward-memory/, view, URL name after "reward-memory-")
ROUTES = [
    ("corpora/", views.CorpusListApi, "corpora"),
    ("corpora/<str:corpus_id>/health/", views.CorpusHealthApi, "corpus-health"),
    ("candidates/review/", views.CandidateReviewApi, "candidate-review"),
    ("reviews/<str:review_id>/apply/", views.ReviewApplyApi, "review-apply"),
    ("records/<str:record_ref>/revoke/", views.RecordRevokeApi, "record-revoke"),
    ("records/<str:record_ref>/supersede/", views.RecordSupersedeApi, "record-supersede"),
    (
        "records/<str:record_ref>/provider-deletion/",
        views.RecordProviderDeletionApi,
        "record-provider-deletion",
    ),
    ("ingest/", views.IngestApi, "ingest"),
    ("recall/", views.RecallApi, "recall"),
    ("application-receipts/", views.ApplicationReceiptApi, "application-receipts"),
    ("hooks/<str:boundary>/", views.BoundaryHookApi, "boundary-hook"),
    (
        "experiments/<str:goal_id>/<str:agent_id>/status/",
        views.ExperimentStatusApi,
        "experiment-status",
    ),
]

urlpatterns = [
    path(f"reward-memory/{route}", view.as_view(), name=f"reward-memory-{name}")
    for route, view, name in ROUTES
]
