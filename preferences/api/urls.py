from django.urls import include, path

from preferences.api import views

agent = "goals/<str:goal_id>/agents/<str:agent_id>/preferences/"

urlpatterns = [
    path(agent, views.PreferenceReadApi.as_view(), name="preferences-read"),
    path(f"{agent}observe/", views.PreferenceObserveApi.as_view(), name="preferences-observe"),
    path(f"{agent}remember/", views.PreferenceRememberApi.as_view(), name="preferences-remember"),
    path(f"{agent}retire/", views.PreferenceRetireApi.as_view(), name="preferences-retire"),
    path(f"{agent}history/", views.PreferenceHistoryApi.as_view(), name="preferences-history"),
    path("", include("preferences.api.recall_urls")),
]
