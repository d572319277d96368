"""URLs of the persona editor and memory audit (/workspaces/ and their /api/ twins).

A root is its index in memory_roots(); <whole:> is urls.py's bounded number. "-" stands where a JID would, for the root's global files.
Specific routes come before the catch-all <name> ones.
"""

from django.urls import path
from django.views.generic import RedirectView

from sessionviewer.views import api_workspaces as api
from sessionviewer.views import workspaces as views

JID = "workspaces/<whole:root>/<str:jid>/"

urlpatterns = [
    # /workspaces/: every root, search, secrets report, audit log, revisions
    path("workspaces/", views.workspace_list, name="workspace-list"),
    path("workspaces/search/", views.search, name="workspace-search"),
    path("workspaces/secrets/", views.secrets, name="workspace-secrets"),
    path("workspaces/audit-log/", views.audit_log, name="workspace-audit-log"),
    path("workspaces/memory-changes/", views.memory_changes, name="workspace-memory-changes"),
    path("workspaces/memory-findings/", views.memory_findings_page, name="workspace-memory-findings"),
    path("workspaces/preview", views.preview, name="workspace-preview"),
    path("workspaces/revisions/<whole:revision_id>/", views.revision_detail, name="workspace-revision"),
    path(
        "workspaces/revisions/<whole:revision_id>/restore",
        views.revision_restore,
        name="workspace-revision-restore",
    ),
    path(
        "workspaces/revisions/<whole:revision_id>/restore-before",
        views.revision_restore_before,
        name="workspace-revision-restore-before",
    ),
    # /workspaces/<root>/-/<name>/: the root's global persona files
    path("workspaces/<whole:root>/-/<str:name>/", views.file_source, name="workspace-global-source"),
    path("workspaces/<whole:root>/-/<str:name>/edit/", views.edit_file, name="workspace-global-edit"),
    path("workspaces/<whole:root>/-/<str:name>/save", views.save_file, name="workspace-global-save"),
    path(
        "workspaces/<whole:root>/-/findings/<str:fp>/purge/",
        views.purge_confirm,
        name="workspace-global-purge",
    ),
    path(
        "workspaces/<whole:root>/-/findings/<str:fp>/purge/run",
        views.purge_finding,
        name="workspace-global-purge-run",
    ),
    # /workspaces/<root>/<jid>/: one JID
    path(JID, views.jid_detail, name="workspace-jid"),
    path(JID + "prompt/", views.prompt_detail, name="workspace-prompt"),
    path(JID + "timeline/", views.memory_timeline_page, name="workspace-memory-timeline"),
    path(JID + "as-of/", views.memory_as_of_page, name="workspace-memory-as-of"),
    path(JID + "new/", views.new_confirm, name="workspace-new"),
    path(JID + "new/run", views.new_session, name="workspace-new-run"),
    path(JID + "forget/", views.forget_confirm, name="workspace-forget"),
    path(JID + "forget/run", views.forget, name="workspace-forget-run"),
    path(JID + "findings/<str:fp>/purge/", views.purge_confirm, name="workspace-purge"),
    path(JID + "findings/<str:fp>/purge/run", views.purge_finding, name="workspace-purge-run"),
    path(JID + "files/<str:name>", views.stored_file, name="workspace-file"),
    path(
        JID + "sessions/<str:name>/",
        views.file_source,
        {"subdir": "sessions"},
        name="workspace-session-source",
    ),
    path(JID + "<str:name>/", views.file_source, name="workspace-source"),
    path(JID + "<str:name>/edit/", views.edit_file, name="workspace-edit"),
    path(JID + "<str:name>/save", views.save_file, name="workspace-save"),
    path(JID + "<str:name>/remove/", views.remove_confirm, name="workspace-remove"),
    path(JID + "<str:name>/remove/run", views.remove_file, name="workspace-remove-run"),
    # The JSON twins: the same paths under /api/, without the trailing slash
    path("api/workspaces", api.api_workspace_list, name="api-workspace-list"),
    path("api/workspaces/search", api.api_search, name="api-workspace-search"),
    path("api/workspaces/secrets", api.api_secrets, name="api-workspace-secrets"),
    path("api/workspaces/audit-log", api.api_audit_log, name="api-workspace-audit-log"),
    path("api/workspaces/memory-changes", api.api_memory_changes, name="api-workspace-memory-changes"),
    path("api/workspaces/memory-findings", api.api_memory_findings, name="api-workspace-memory-findings"),
    path(
        "api/workspaces/revisions/<whole:revision_id>",
        api.api_revision_detail,
        name="api-workspace-revision",
    ),
    path("api/workspaces/<whole:root>/-/<str:name>", api.api_file_source, name="api-workspace-global-source"),
    path(
        "api/workspaces/<whole:root>/-/<str:name>/edit", api.api_edit_file, name="api-workspace-global-edit"
    ),
    path(
        "api/workspaces/<whole:root>/-/findings/<str:fp>/purge",
        api.api_purge_confirm,
        name="api-workspace-global-purge",
    ),
    path("api/" + JID.rstrip("/"), api.api_jid_detail, name="api-workspace-jid"),
    path("api/" + JID + "prompt", api.api_prompt, name="api-workspace-prompt"),
    path("api/" + JID + "timeline", api.api_memory_timeline, name="api-workspace-memory-timeline"),
    path("api/" + JID + "as-of", api.api_memory_as_of, name="api-workspace-memory-as-of"),
    path("api/" + JID + "new", api.api_new_confirm, name="api-workspace-new"),
    path("api/" + JID + "forget", api.api_forget_confirm, name="api-workspace-forget"),
    path("api/" + JID + "findings/<str:fp>/purge", api.api_purge_confirm, name="api-workspace-purge"),
    path(
        "api/" + JID + "sessions/<str:name>",
        api.api_file_source,
        {"subdir": "sessions"},
        name="api-workspace-session-source",
    ),
    path("api/" + JID + "<str:name>", api.api_file_source, name="api-workspace-source"),
    path("api/" + JID + "<str:name>/edit", api.api_edit_file, name="api-workspace-edit"),
    path("api/" + JID + "<str:name>/remove", api.api_remove_confirm, name="api-workspace-remove"),
    # Where the reports' twins answered before they moved under /api/workspaces/
    path(
        "api/audit-log",
        RedirectView.as_view(pattern_name="api-workspace-audit-log", permanent=True, query_string=True),
    ),
]
