"""The redaction review (/sessions/<id>/redact/) and its redacted exports: no checked value is
left anywhere in the bytes, in any form; unchecked values stay; the person's words go too."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from django.urls import reverse

from sessionviewer import export, redaction
from sessionviewer.index import findings, index_roots
from sessionviewer.roots import RootSpec

from .fixture_files import index_fixture

TOKEN = "ghp_Zq7Lm2Xv9Rt4Yp8Wk3Nb6Hc1Jd5Fg0Sa2Qe7"
EMAIL = "bob.smith@clientcorp.example"
# What the review lists for tests/fixtures/claude_code/values_to_redact.jsonl, checked by default:
# a token (in a diff, a code fence and a curl command), paths under /home (the title's project,
# a tool call's file path and its diff), e-mail addresses and host names (one in a link's href).
CHECKED = (
    TOKEN,
    EMAIL,
    "/home/alice/shop/settings.py",
    "/home/alice/shop",
    "build.acme.io",
    "deploy@build.acme.io",
    "status.acme.io",
)


@pytest.fixture
def session(tmp_path, viewer):
    return index_fixture(tmp_path, "claude_code", "values_to_redact.jsonl", "projects/-home-alice-shop", "s1")


def forms_of(value: str) -> set[str]:
    """A value as it may be written out: as is, HTML-escaped, JSON-escaped, both."""
    as_json = json.dumps(value, ensure_ascii=False)[1:-1]
    return {value, html.escape(value), html.escape(value, quote=False), as_json, html.escape(as_json)}


def review_rows(client, session) -> list[tuple[str, str, str]]:
    """(id, kind, masked) of each checkbox of the review page."""
    page = client.get(reverse("session-redact", args=[session.id])).content.decode()
    pattern = (
        r'name="values" value="(\w+)" checked> <span class="redact-kind">([^<]+)</span> <code>([^<]*)</code>'
    )
    return re.findall(pattern, page)


def export_bytes(client, session, ids, action: str, words: str = "") -> bytes:
    url = reverse("session-redact", args=[session.id])
    response = client.post(url, {"values": ids, "words": words, "action": action})
    assert response.status_code == 200
    return b"".join(response.streaming_content)


def test_review_page_lists_every_kind_masked_and_never_a_value(client, session):
    response = client.get(reverse("session-redact", args=[session.id]))
    body = response.content.decode()
    kinds = {kind for _, kind, _ in review_rows(client, session)}
    assert {"github token", "home path", "email", "host"} <= kinds
    for value in CHECKED:
        assert html.escape(value) not in body and value not in body


@pytest.mark.parametrize("action", ["html", "md"])
def test_redacted_export_holds_no_checked_value_in_any_form(client, session, action):
    ids = [row[0] for row in review_rows(client, session)]
    body = export_bytes(client, session, ids, action, words="ClientCorp").decode()
    for value in (*CHECKED, "ClientCorp"):
        for form in forms_of(value):
            assert form not in body, f"{form!r} left in the {action} export"
    assert "[redacted: github_token]" in body
    assert "[redacted: word]" in body


def test_a_value_is_in_an_attribute_of_the_plain_export(client, session):
    body = b"".join(client.get(reverse("session-export-html", args=[session.id])).streaming_content)
    assert b'href="https://status.acme.io/board"' in body


def test_redacted_html_export_says_how_many_values_of_each_kind_were_taken_out(client, session):
    rows = review_rows(client, session)
    ids = [row[0] for row in rows]
    body = export_bytes(client, session, ids, "html", words="ClientCorp\n\nAcme").decode()
    summary = re.search(r'<p class="redaction-summary" id="redaction-summary">([^<]*)</p>', body).group(1)
    hosts = sum(kind == "host" for _, kind, _ in rows)
    assert f"{hosts} hosts" in summary
    assert "2 words" in summary


def test_the_machine_is_listed_and_taken_out_leaving_the_styles_whole(client, session, settings):
    machine = session.source.machine
    assert machine
    rows = review_rows(client, session)
    assert any(kind == "host" and masked.startswith(machine[0]) for _, kind, masked in rows)
    body = export_bytes(client, session, [row[0] for row in rows], "html").decode()
    assert f"<dd>{machine}</dd>" not in body
    styles = re.search(r"<style>(.*?)</style>", body, re.S).group(1)
    digest = re.search(r"style-src &#x27;sha256-([^&]+)&#x27;", body).group(1)
    assert base64.b64encode(hashlib.sha256(styles.encode()).digest()).decode() == digest


def test_words_found_in_the_policy_and_styles_leave_both_whole(client, session):
    plain = b"".join(client.get(reverse("session-export-html", args=[session.id])).streaming_content).decode()
    body = export_bytes(client, session, [], "html", words="none\nsha256\ncolor").decode()
    meta = r'<meta http-equiv="Content-Security-Policy"[^>]*>'
    assert re.search(meta, body).group() == re.search(meta, plain).group()
    style = r"<style>.*?</style>"
    assert re.search(style, body, re.S).group() == re.search(style, plain, re.S).group()


def test_an_unchecked_value_stays_in_the_export(client, session):
    rows = review_rows(client, session)
    kept = next(row_id for row_id, kind, masked in rows if kind == "host" and masked.startswith("sta"))
    body = export_bytes(client, session, [row[0] for row in rows if row[0] != kept], "md").decode()
    assert "status.acme.io" in body
    assert TOKEN not in body


def test_nothing_checked_exports_the_session_as_it_is(client, session):
    body = export_bytes(client, session, [], "md").decode()
    assert TOKEN in body and "Nothing was redacted." in body


def test_an_id_the_page_did_not_offer_is_a_400(client, session):
    url = reverse("session-redact", args=[session.id])
    response = client.post(url, {"values": ["not-an-offered-id"], "action": "html"})
    assert response.status_code == 400


def test_review_page_needs_view_session(client, session, django_user_model):
    client.force_login(django_user_model.objects.create_user("nobody-here"))
    assert client.get(reverse("session-redact", args=[session.id])).status_code == 403


def test_redaction_replaces_the_longest_value_first():
    redacted = redaction.Redaction(
        {"/home/alice": "home_path", "/home/alice/x.py": "home_path", "alice": "word"}
    )
    assert redacted.text("at /home/alice/x.py and /home/alice/y") == (
        "at [redacted: home_path] and [redacted: home_path]/y"
    )


def test_the_persons_words_are_taken_out_in_any_case():
    redacted = redaction.Redaction({"ClientCorp": redaction.WORD, "/home/Al": redaction.HOME_PATH})
    assert (
        redacted.text("CLIENTCORP and clientcorp, /home/al")
        == "[redacted: word] and [redacted: word], /home/al"
    )


def test_a_value_outside_ascii_is_taken_out_of_ascii_json_too():
    redacted = redaction.Redaction({"Zoë Müller": redaction.WORD})
    assert redacted.rendered(json.dumps({"name": "Zoë Müller"})) == '{"name": "[redacted: word]"}'


def test_review_values_finds_hosts_of_urls_and_commands_not_files():
    text = "scp notes.txt web01:/tmp/ && ssh -p 22 gw && curl https://api.acme.io/v1 localhost"
    hosts = {c.value for c in redaction.review_values([text]) if c.kind == redaction.HOST}
    assert hosts == {"web01", "gw", "api.acme.io"}


def test_review_values_lists_the_machine_itself():
    assert redaction.Candidate(redaction.HOST, "laptop", "l*****") in redaction.review_values([], "laptop")


def links_out(body: str) -> list[str]:
    """What in an export could lead back into the app: its paths, and any link that is neither
    an anchor of the file nor an address the session itself wrote. The styles aside: a comment
    of theirs names templates/sessions/."""
    body = re.sub(r"<style>.*?</style>", "", body, flags=re.S)
    found = [path for path in ("/sessions/", "/api/", "hx-get") if path in body]
    hrefs = re.findall(r'(?:href|src|action)="([^"]*)"', body)
    return found + [href for href in hrefs if not href.startswith(("#", "http://", "https://", "data:"))]


@pytest.mark.parametrize("action", ["html", "md"])
@pytest.mark.parametrize("which", ["subagent", "parent"])
def test_a_redacted_export_links_to_nothing_of_the_app(client, viewer, family, action, which):
    session = family if which == "subagent" else family.parent
    assert session.problems.exists() and (session.parent_id or session.children.exists())
    ids = [row[0] for row in review_rows(client, session)]
    body = export_bytes(client, session, ids, action).decode()
    assert links_out(body) == []
    for path in (session.path, session.source.path, family.parent.path, session.project):
        assert path not in body
    assert f"sessions/{session.id}" not in body and f"sessions/{family.parent_id}" not in body


def test_a_plain_export_names_its_parent_subagents_and_problems_without_links(client, viewer, family):
    for session in (family, family.parent):
        url = reverse("session-export-html", args=[session.id])
        body = b"".join(client.get(url).streaming_content).decode()
        assert links_out(body) == []
    assert family.display_title[:20] in body  # the parent's subagent, as text


SERVER_FILES = ("/srv/clientcorp/app/config.py", "/etc/nginx/sites-enabled/clientcorp.conf")


@pytest.fixture
def outside_home(tmp_path, viewer):
    return index_fixture(
        tmp_path, "claude_code", "paths_outside_home.jsonl", "projects/-home-alice-shop", "s1"
    )


def all_rows(client, session) -> list[tuple[str, bool, str, str]]:
    """(id, checked, kind, masked) of every checkbox of the review page."""
    page = client.get(reverse("session-redact", args=[session.id])).content.decode()
    pattern = r'name="values" value="(\w+)"( checked)?> <span class="redact-kind">([^<]+)</span> <code>([^<]*)</code>'
    return [(row_id, bool(on), kind, masked) for row_id, on, kind, masked in re.findall(pattern, page)]


def test_files_outside_home_are_listed_masked_and_unchecked(client, outside_home):
    rows = all_rows(client, outside_home)
    files = {masked: checked for _, checked, kind, masked in rows if kind == "file path"}
    assert files == {
        "/srv/cli*****rp/a**/config.py": False,
        "/etc/n****/sit********ed/clientcorp.conf": False,
    }
    assert all(checked for _, checked, kind, _ in rows if kind == "home path")


def test_the_sessions_own_file_outside_home_is_listed_checked(client, outside_home):
    # Here under the test's temporary folder; on a server, wherever its sessions are kept.
    rows = all_rows(client, outside_home)
    assert [checked for _, checked, kind, _ in rows if kind == "session file"] == [True]
    body = export_bytes(client, outside_home, [r[0] for r in rows if r[1]], "html").decode()
    assert outside_home.path not in body and "[redacted: session_file]" in body


def test_a_home_path_goes_as_a_project_and_as_claude_codes_folder_too():
    redacted = redaction.Redaction({"/home/alice/clientcorp": redaction.HOME_PATH})
    text = "in ~/clientcorp, from -home-alice-clientcorp/s1.jsonl, at /home/alice/clientcorp/x.py"
    assert redacted.text(text) == (
        "in [redacted: home_path], from [redacted: home_path]/s1.jsonl, at [redacted: home_path]/x.py"
    )
    assert redacted.counts == {"home_path": 1}


def test_a_checked_file_path_is_taken_out_everywhere(client, outside_home):
    rows = all_rows(client, outside_home)
    ids = [row_id for row_id, checked, kind, _ in rows if checked or kind == "file path"]
    for action in ("html", "md"):
        body = export_bytes(client, outside_home, ids, action).decode()
        for value in SERVER_FILES:
            for form in forms_of(value):
                assert form not in body, f"{form!r} left in the {action} export"
        assert "[redacted: file_path]" in body


@pytest.mark.parametrize("action", ["html", "md"])
def test_a_redacted_download_is_named_by_the_session_id_not_by_a_redacted_value(client, outside_home, action):
    # The session's own file is checked: its name, redacted, was "redacted-redacted-session_file".
    rows = all_rows(client, outside_home)
    url = reverse("session-redact", args=[outside_home.id])
    response = client.post(url, {"values": [r[0] for r in rows if r[1]], "action": action})
    disposition = response["Content-Disposition"]
    assert disposition == f'attachment; filename="redacted-session-{outside_home.id}.{action}"'
    candidates = export.review_candidates(outside_home)
    checked = [c.value for c in candidates if c.kind not in redaction.UNCHECKED]
    assert outside_home.path in checked
    for value in (*checked, Path(outside_home.path).stem, "session_file"):
        assert value not in disposition


def test_an_unchecked_file_path_stays(client, outside_home):
    ids = [row_id for row_id, checked, _, _ in all_rows(client, outside_home) if checked]
    body = export_bytes(client, outside_home, ids, "md").decode()
    assert all(value in body for value in SERVER_FILES)


def test_review_values_lists_touched_files_outside_home_only():
    found = redaction.review_values([], paths=["/home/bo/x.py", "/srv/app/x.py", "", "x.py"])
    assert [(c.kind, c.value) for c in found] == [
        (redaction.FILE_PATH, "/srv/app/x.py"),
        (redaction.FILE_PATH, "x.py"),
    ]


def test_a_secret_the_index_found_under_a_json_key_is_listed_and_taken_out(client, tmp_path, viewer):
    # {"password": "..."} in a tool call: neither string alone is a secret; the index reads
    # them as password=... and keeps a finding row, which the review follows.
    session = index_fixture(
        tmp_path, "claude_code", "secret_under_a_json_key.jsonl", "projects/-home-alice-shop", "s1"
    )
    assert session.findings.filter(kind="secret_assignment").exists()
    rows = review_rows(client, session)
    assert any(kind == "secret assignment" for _, kind, _ in rows)
    for action in ("html", "md"):
        body = export_bytes(client, session, [row[0] for row in rows], action).decode()
        assert "Qw8Er5Ty2Ui9Op4As7Df" not in body
        assert "[redacted: secret_assignment]" in body


def test_a_review_is_made_once_for_the_page_and_the_export_it_posts(client, session, monkeypatch):
    made = []
    review_values = redaction.review_values
    monkeypatch.setattr(redaction, "review_values", lambda *a, **k: made.append(1) or review_values(*a, **k))
    export.clear_reviews()
    ids = [row[0] for row in review_rows(client, session)]
    review_rows(client, session)
    export_bytes(client, session, ids, "html")
    assert len(made) == 1


def emails(client, session) -> list[str]:
    return [masked for _, kind, masked in review_rows(client, session) if kind == "email"]


def test_a_line_appended_since_is_in_the_next_review(client, session):
    late = "c****@lat************le"  # carol@latecomer.example, masked
    assert late not in emails(client, session)
    line = json.loads(Path(session.path).read_text(encoding="utf-8").splitlines()[0])
    with open(session.path, "a", encoding="utf-8") as file:
        line.update(uuid="u-late", parentUuid=None)
        line["message"] = {"role": "user", "content": "Also tell carol@latecomer.example"}
        file.write(json.dumps(line) + "\n")
    index_roots([RootSpec(Path(session.source.path), "claude_code")])
    assert late in emails(client, session)


def test_review_values_finds_in_texts_together_what_it_finds_in_each_apart():
    texts = [
        "ssh",
        "web01",
        "carol@",
        "acme.example",
        "+33 6 12 34",
        "56 78",
        "/home/",
        "bo/x",
        "a@b.example",
    ]
    together = set(redaction.review_values(texts))
    apart = {candidate for text in texts for candidate in redaction.review_values([text])}
    assert together == apart == {redaction.Candidate(redaction.EMAIL, "a@b.example", "a@b.e****le")}


def test_the_prefilter_leaves_the_review_as_it_was():
    texts = ["key: ghp_Zq7Lm2Xv9Rt4Yp8Wk3Nb6Hc1Jd5Fg0Sa2Qe7", "password = Qw8Er5Ty2Ui9Op4As7Df", "no secret"]
    assert redaction.review_values(texts) == redaction.review_values(
        texts, may_hold_credential=findings.may_hold_secret
    )
    assert {c.kind for c in redaction.review_values(texts)} == {"github_token", "secret_assignment"}


def test_a_decorator_on_a_diff_line_is_no_address():
    found = redaction.review_values(['+@app.get("/cart")', "-@pytest.fixture", "+bo@shop.example"])
    assert [(c.kind, c.value) for c in found] == [(redaction.EMAIL, "+bo@shop.example")]


# The review's JSON twin (/api/sessions/<id>/redact): the page's list, masked, never a value.


def twin(client, session):
    response = client.get(reverse("api-session-redact", args=[session.id]))
    assert response.status_code == 200
    return response


@pytest.mark.parametrize("fixture", ["session", "outside_home"])
def test_the_review_twin_lists_what_the_page_lists(client, request, fixture):
    session = request.getfixturevalue(fixture)
    values = twin(client, session).json()["values"]
    page = [
        (row_id, checked, kind, html.unescape(masked))
        for row_id, checked, kind, masked in all_rows(client, session)
    ]
    assert page
    assert [(v["id"], v["checked"], v["label"], v["masked"]) for v in values] == page


def test_the_review_twin_counts_the_values_of_each_kind(client, session):
    data = twin(client, session).json()
    on_page = Counter(kind.replace(" ", "_") for _, _, kind, _ in all_rows(client, session))
    assert data["counts"] == on_page and data["count"] == sum(on_page.values())
    assert data["counts"]["github_token"] == 1


def test_the_review_twin_says_which_values_are_left_unchecked(client, outside_home):
    values = twin(client, outside_home).json()["values"]
    assert {v["kind"]: v["checked"] for v in values if v["kind"] in ("file_path", "session_file")} == {
        "file_path": False,
        "session_file": True,
    }


def json_forms(value: str) -> set[bytes]:
    """A value as a JSON text may hold it: as is, escaped to ASCII or not, "/" escaped."""
    escaped = {json.dumps(value, ensure_ascii=ascii)[1:-1] for ascii in (True, False)}
    return {form.encode() for form in {value, *escaped, *(f.replace("/", "\\/") for f in escaped)}}


@pytest.mark.parametrize("fixture", ["session", "outside_home"])
def test_the_review_twin_holds_no_value_in_any_form(client, request, fixture):
    session = request.getfixturevalue(fixture)
    # A machine named as a host's own name may be short enough to be in an id: one of its own.
    session.source.machine = "clientcorp-build-07"
    session.source.save(update_fields=("machine",))
    planted = {session.path, session.source.machine, *(CHECKED if fixture == "session" else SERVER_FILES)}
    # Every value the review found, but the short paths it shows whole (/etc/hosts says no name).
    values = {c.value for c in export.review_candidates(session) if c.masked != c.value}
    assert planted <= values
    body = twin(client, session).content
    for value in values:
        for form in json_forms(value):
            assert form not in body, f"{form!r} in the review's JSON"


def test_the_review_page_links_its_twin(client, session):
    page = client.get(reverse("session-redact", args=[session.id])).content.decode()
    assert f'<a href="/api/sessions/{session.id}/redact">JSON</a>' in page


def test_the_review_twin_needs_view_session(client, session, django_user_model):
    client.force_login(django_user_model.objects.create_user("nobody-here"))
    response = client.get(reverse("api-session-redact", args=[session.id]))
    assert response.status_code == 403 and response.json()["status"] == 403
    client.logout()
    assert client.get(reverse("api-session-redact", args=[session.id])).status_code == 401


@pytest.mark.parametrize("name", ["session-redact", "api-session-redact"])
def test_the_review_of_an_unknown_session_is_a_404(client, viewer, name):
    assert client.get(reverse(name, args=[424242])).status_code == 404
