from django.urls import path

from turn_recall.api import views

urlpatterns = [
    path("turn-recall/", views.TurnRecallApi.as_view(), name="turn-recall"),
    path(
        "goals/<str:goal_id>/agents/<str:agent_id>/quota/should-run/",
        views.QuotaShouldRunApi.as_view(),
        name="turn-recall-quota-should-run",
    ),
]
