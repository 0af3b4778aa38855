from django.urls import path

from hooks.api import views

urlpatterns = [
    path("goals/<str:goal_id>/todos/", views.TodoListAddApi.as_view(), name="hooks-todo-list"),
    path("hooks/dispatches/", views.HookDispatchListApi.as_view(), name="hooks-dispatch-list"),
    path("hooks/intents/", views.HookIntentListApi.as_view(), name="hooks-intent-list"),
    path(
        "hooks/registrations/",
        views.HookRegistrationListApi.as_view(),
        name="hooks-registration-list",
    ),
]
