from django.urls import path

from loopx_site.core.api import views

urlpatterns = [
    path("goals/", views.GoalListCreateApi.as_view(), name="goal-list"),
    path("goals/<str:goal_id>/", views.GoalDetailApi.as_view(), name="goal-detail"),
    path("goals/<str:goal_id>/export/", views.GoalExportApi.as_view(), name="goal-export"),
]
