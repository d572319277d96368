from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, register_converter

from sessionviewer.forms import WholeNumberConverter
from sessionviewer.projects import ProjectConverter
from sessionviewer.views import api, pages, share

register_converter(ProjectConverter, "project")
# Every id, line and block in a path (urls_workspaces.py's too): bounded, so that a number
# past what a column holds is a 404, never an overflow in the SQL.
register_converter(WholeNumberConverter, "whole")

handler400 = "sessionviewer.views.http.handler400"

urlpatterns = [
    # / (the session list and search) and its JSON twins
    path("", pages.session_list, name="session-list"),
    path("api/sessions", api.session_list, name="api-session-list"),
    path("api/sessions/facets", api.session_facets, name="api-session-facets"),
    path("api/search", api.search_hits, name="api-search"),
    # /sessions/<id>/
    path("sessions/<whole:session_id>/", pages.session_detail, name="session-detail"),
    path("sessions/<whole:session_id>/export.html", pages.session_export_html, name="session-export-html"),
    path("sessions/<whole:session_id>/export.md", pages.session_export_md, name="session-export-md"),
    path("sessions/<whole:session_id>/redact/", share.session_redact, name="session-redact"),
    path("shares/<whole:share_id>/revoke", share.share_revoke, name="share-revoke"),
    # /shared/<token>/: a share link, for people without an account; nothing else reads a token
    path("shared/<str:token>/", share.shared_page, name="shared-page"),
    path("api/sessions/<whole:session_id>", api.session_detail, name="api-session-detail"),
    path("api/sessions/<whole:session_id>/raw", api.session_raw, name="api-session-raw"),
    path("api/sessions/<whole:session_id>/redact", api.session_redact, name="api-session-redact"),
    path("sessions/<whole:session_id>/cost/", pages.session_cost, name="session-cost"),
    path(
        "sessions/<whole:session_id>/lines/<whole:line>/blocks/<whole:block>/text",
        pages.entry_text,
        name="session-entry-text",
    ),
    path("api/sessions/<whole:session_id>/cost", api.session_cost, name="api-session-cost"),
    path("sessions/<whole:session_id>/changes/", pages.session_changes, name="session-changes"),
    path("api/sessions/<whole:session_id>/changes", api.session_changes, name="api-session-changes"),
    path(
        "api/sessions/<whole:session_id>/findings/<whole:finding_id>/reveal",
        api.reveal_finding,
        name="api-finding-reveal",
    ),
    path(
        "api/sessions/<whole:session_id>/findings/<whole:finding_id>/dismiss",
        api.dismiss_finding,
        name="api-finding-dismiss",
    ),
    # /activity/
    path("secrets/", pages.session_secrets, name="session-secrets"),
    path("api/secrets", api.session_secrets, name="api-session-secrets"),
    path("activity/", pages.activity_page, name="activity"),
    path("api/activity", api.activity_report, name="api-activity"),
    # /projects/<key>/: one working directory's sessions, usage, tools and branches
    path("projects/<project:project>/", pages.project_detail, name="project-detail"),
    path("api/projects/<project:project>", api.project_detail, name="api-project-detail"),
    path("", include("sessionviewer.urls_workspaces")),
    path("favicon.ico", pages.favicon, name="favicon"),
    # accounts
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
