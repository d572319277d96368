from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from sessionviewer.views import api, pages

urlpatterns = [
    # /sessions/ and its JSON twin
    path("", pages.session_list, name="session-list"),
    path("sessions/<int:session_id>/", pages.session_detail, name="session-detail"),
    path("api/sessions", api.session_list, name="api-session-list"),
    path("api/sessions/<int:session_id>", api.session_detail, name="api-session-detail"),
    path("api/sessions/<int:session_id>/raw", api.session_raw, name="api-session-raw"),
    path("", include("sessionviewer.urls_workspaces")),
    # accounts
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
