from django.urls import path

from reward_memory.api import views

urlpatterns = [
    path("reward-memory/corpora/", views.CorpusListApi.as_view(), name="reward-memory-corpora"),
    path(
        "reward-memory/corpora/<str:corpus_id>/health/",
        views.CorpusHealthApi.as_view(),
        name="reward-memory-corpus-health",
    ),
    path(
        "reward-memory/candidates/review/",
        views.CandidateReviewApi.as_view(),
        name="reward-memory-candidate-review",
    ),
    path(
        "reward-memory/reviews/<str:review_id>/apply/",
        views.ReviewApplyApi.as_view(),
        name="reward-memory-review-apply",
    ),
    path(
        "reward-memory/records/<str:record_ref>/revoke/",
        views.RecordRevokeApi.as_view(),
        name="reward-memory-record-revoke",
    ),
    path(
        "reward-memory/records/<str:record_ref>/supersede/",
        views.RecordSupersedeApi.as_view(),
        name="reward-memory-record-supersede",
    ),
    path("reward-memory/ingest/", views.IngestApi.as_view(), name="reward-memory-ingest"),
    path("reward-memory/recall/", views.RecallApi.as_view(), name="reward-memory-recall"),
    path(
        "reward-memory/application-receipts/",
        views.ApplicationReceiptApi.as_view(),
        name="reward-memory-application-receipts",
    ),
    path(
        "reward-memory/hooks/<str:boundary>/",
        views.BoundaryHookApi.as_view(),
        name="reward-memory-boundary-hook",
    ),
    path(
        "reward-memory/experiments/<str:goal_id>/<str:agent_id>/status/",
        views.ExperimentStatusApi.as_view(),
        name="reward-memory-experiment-status",
    ),
]
