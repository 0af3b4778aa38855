"""Routes of the semantic preference recall hook (``/api/v1/semantic-preferences/…``)."""

from django.urls import path

from preferences.api import provider_views
from preferences.api import recall_views as views

base = "semantic-preferences/"

urlpatterns = [
    path(f"{base}recall/", views.SemanticPreferenceRecallApi.as_view(), name="semantic-recall"),
    path(f"{base}doctor/", views.SemanticPreferenceDoctorApi.as_view(), name="semantic-doctor"),
    path(f"{base}receipts/", views.SemanticPreferenceReceiptApi.as_view(), name="semantic-receipt"),
    path(
        f"{base}maintenance-receipts/",
        views.SemanticPreferenceMaintenanceReceiptApi.as_view(),
        name="semantic-maintenance-receipt",
    ),
    path(
        f"{base}provider/",
        provider_views.SemanticPreferenceProviderApi.as_view(),
        name="semantic-provider",
    ),
    path(
        f"{base}provider/doctor/",
        provider_views.SemanticPreferenceProviderDoctorApi.as_view(),
        name="semantic-provider-doctor",
    ),
]
