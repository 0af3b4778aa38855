from django.urls import path

from turn_recall.api import views

urlpatterns = [
    path("turn-recall/", views.TurnRecallApi.as_view(), name="turn-recall"),
    path("turn-capsules/verify/", views.CapsuleVerifyApi.as_view(), name="turn-capsule-verify"),
    # The Turn composition (settlement + reflection); hooks owns the primary seam.
    path("turns/settle/", views.TurnSettleApi.as_view(), name="hooks-turn-settle"),
    path(
        "goals/<str:goal_id>/agents/<str:agent_id>/quota/should-run/",
        views.QuotaShouldRunApi.as_view(),
        name="turn-recall-quota-should-run",
    ),
]
