"""Purging one finding (a leaked key, say) from every stored state and revision of a JID and
of the global files: replaced by [purged], the other bytes kept, audited by kind and
fingerprint, and no copy kept anywhere."""

from __future__ import annotations

import html
import re

import orjson
import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from sessionviewer import workspaces as ws
from sessionviewer.models import AuditEvent, MemorySnapshot, Revision

from .memory_turns import ALICE, append, at, index, message, write
from .users import READER, make_user

pytestmark = pytest.mark.django_db

KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"


def leak(client, tree) -> str:
    """The agent writes the key into memory.md and the global instructions; an editor then
    saves it out of memory.md (its revision's before holds it). Returns the fingerprint."""
    write(tree / ALICE / "memory.md", f"Likes tea.\nkey {KEY}\n", at(10, 0))
    write(tree / "instructions.md", f"Use {KEY} for the API.\n", at(10, 1))
    index(tree)
    url = reverse("workspace-save", args=[0, ALICE, "memory.md"])
    path = tree / ALICE / "memory.md"
    assert client.post(url, {"text": "Likes tea.\n", "version": ws.file_version(path)}).status_code == 302
    findings = orjson.loads(client.get(reverse("api-workspace-memory-findings"), {"jid": ALICE}).content)
    [finding] = findings["findings"]
    return finding["fingerprint"]


def everything_stored() -> str:
    """Every stored byte a purge must clean: states, their findings, revisions, audit events."""
    parts = []
    for snapshot in MemorySnapshot.objects.all():
        parts.append(bytes(snapshot.content or b"").decode("utf-8", "replace"))
        parts.append(orjson.dumps(snapshot.findings).decode())
    for revision in Revision.objects.all():
        parts += [revision.before or "", revision.after or ""]
        parts += [
            bytes(d or b"").decode("utf-8", "replace") for d in (revision.before_bytes, revision.after_bytes)
        ]
    parts += [orjson.dumps(event.detail).decode() for event in AuditEvent.objects.all()]
    return "\n".join(parts)


def purge(client, fp: str):
    return client.post(reverse("workspace-purge-run", args=[0, ALICE, fp]))


def test_a_purge_leaves_no_copy_in_states_revisions_or_the_audit_log(client, tree, editor):
    fp = leak(client, tree)
    assert KEY in everything_stored()
    assert purge(client, fp).status_code == 302
    assert KEY not in everything_stored()


def test_a_purge_replaces_the_value_and_keeps_the_other_bytes(client, tree, editor):
    fp = leak(client, tree)
    purge(client, fp)
    memory = MemorySnapshot.objects.filter(jid=ALICE, filename="memory.md").order_by("id")
    assert [bytes(s.content) for s in memory] == [
        b"Likes tea.\n",
        b"Likes tea.\nkey [purged]\n",
        b"Likes tea.\n",
    ]
    glob = MemorySnapshot.objects.filter(jid="", filename="instructions.md").order_by("-id").first()
    assert bytes(glob.content) == b"Use [purged] for the API.\n"
    revision = Revision.objects.get()
    assert (revision.before, bytes(revision.before_bytes)) == (
        "Likes tea.\nkey [purged]\n",
        b"Likes tea.\nkey [purged]\n",
    )


def test_a_purge_is_audited_by_kind_and_fingerprint(client, tree, editor):
    fp = leak(client, tree)
    purge(client, fp)
    event = AuditEvent.objects.get(action="purge")
    assert event.detail == {"kind": "anthropic_key", "fingerprint": fp, "snapshots": 2, "revisions": 1}
    # whose history it rewrote
    assert (event.user, event.jid, event.machine) == (editor, ALICE, settings.SESSIONVIEWER_MACHINE)


def test_a_purged_finding_stays_listed_as_purged_on_a_day_by_someone_without_its_value(client, tree, editor):
    fp = leak(client, tree)
    before = orjson.loads(client.get(reverse("api-workspace-memory-findings")).content)["findings"]
    assert {f["jid"] for f in before} == {ALICE, ""}  # the JID's memory.md and the global instructions
    purge(client, fp)
    [finding] = orjson.loads(client.get(reverse("api-workspace-memory-findings")).content)["findings"]
    assert (finding["fingerprint"], finding["kind"], finding["masked"]) == (fp, "anthropic_key", None)
    assert finding["purged"]["by"] == "edith" and finding["first_seen"] is None
    page = client.get(reverse("workspace-memory-findings")).content.decode()
    event = AuditEvent.objects.get(action="purge")
    assert f'Purged on <time datetime="{event.created_at.isoformat()}">' in page
    assert f"{event.created_at:%Y-%m-%d %H:%M:%S} UTC</time> by edith" in page
    listed = page[page.index('<ol class="changes finding-histories">') :]
    assert before[0]["masked"] not in listed  # (the message saying what was purged names it masked)


def test_the_confirm_page_warns_when_the_disk_still_holds_it(client, tree, editor):
    write(tree / ALICE / "memory.md", f"key {KEY}\n", at(10, 0))
    index(tree)
    [finding] = orjson.loads(client.get(reverse("api-workspace-memory-findings")).content)["findings"]
    page = client.get(finding["purge_url"]).content.decode()
    assert "The files on disk still hold it" in page
    assert KEY not in page
    plan = orjson.loads(
        client.get(reverse("api-workspace-purge", args=[0, ALICE, finding["fingerprint"]])).content
    )
    assert (plan["snapshots"], plan["still_present"]) == (1, [{"file": "memory.md", "line": 1, "column": 5}])


def test_an_unknown_fingerprint_is_a_404(client, tree, editor):
    assert client.get(reverse("workspace-purge", args=[0, ALICE, "0" * 64])).status_code == 404
    assert client.get(reverse("workspace-purge", args=[0, ALICE, "not-hex"])).status_code == 404
    assert client.post(reverse("workspace-purge-run", args=[0, ALICE, "0" * 64])).status_code == 404


def test_a_purge_needs_a_post(client, tree, editor):
    fp = leak(client, tree)
    assert client.get(reverse("workspace-purge-run", args=[0, ALICE, fp])).status_code == 405
    assert KEY in everything_stored()


def test_a_purge_needs_the_csrf_token(tree, editor, client):
    fp = leak(client, tree)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(editor)
    assert strict.post(reverse("workspace-purge-run", args=[0, ALICE, fp])).status_code == 403
    assert KEY in everything_stored()


def test_a_reader_who_may_not_edit_cannot_purge(client, tree, editor):
    fp = leak(client, tree)
    client.force_login(make_user(READER, permissions=("view_workspace",)))
    assert client.get(reverse("workspace-purge", args=[0, ALICE, fp])).status_code == 403
    assert client.post(reverse("workspace-purge-run", args=[0, ALICE, fp])).status_code == 403
    assert client.get(reverse("api-workspace-purge", args=[0, ALICE, fp])).status_code == 403
    assert KEY in everything_stored()
    page = client.get(reverse("workspace-memory-findings")).content.decode()
    assert "Purge from the history" not in page


# A finding in the global persona files alone: purged from the root's history


def global_leak(client, tree) -> dict:
    """The key only in the global instructions, written outside the app and then saved out of
    them by an editor. Returns the finding as the findings report shows it."""
    write(tree / "instructions.md", f"Use {KEY} for the API.\n", at(10, 1))
    index(tree)
    url = reverse("workspace-global-save", args=[0, "instructions.md"])
    path = tree / "instructions.md"
    assert client.post(url, {"text": "Use the vault.\n", "version": ws.file_version(path)}).status_code == 302
    findings = orjson.loads(client.get(reverse("api-workspace-memory-findings")).content)["findings"]
    [finding] = [f for f in findings if f["jid"] == ""]
    return finding


def global_purge(client, fp: str):
    return client.post(reverse("workspace-global-purge-run", args=[0, fp]))


def test_a_global_finding_links_to_its_purge_from_the_findings_page(client, tree, editor):
    finding = global_leak(client, tree)
    assert finding["purge_url"] == reverse("workspace-global-purge", args=[0, finding["fingerprint"]])
    page = client.get(reverse("workspace-memory-findings")).content.decode()
    assert f'href="{finding["purge_url"]}"' in page


def test_a_global_purge_leaves_no_copy_and_keeps_the_other_bytes(client, tree, editor):
    fp = global_leak(client, tree)["fingerprint"]
    assert KEY in everything_stored()
    response = global_purge(client, fp)
    assert (response.status_code, response["Location"]) == (302, reverse("workspace-memory-findings"))
    assert KEY not in everything_stored()
    states = MemorySnapshot.objects.filter(jid="", filename="instructions.md").order_by("id")
    assert bytes(states.first().content) == b"Use [purged] for the API.\n"
    assert Revision.objects.get().before == "Use [purged] for the API.\n"


def test_a_global_purge_is_audited_by_kind_and_fingerprint(client, tree, editor):
    fp = global_leak(client, tree)["fingerprint"]
    global_purge(client, fp)
    event = AuditEvent.objects.get(action="purge")
    assert event.detail == {"kind": "anthropic_key", "fingerprint": fp, "snapshots": 1, "revisions": 1}
    # whose history it rewrote
    assert (event.user, event.jid, event.machine) == (editor, "", settings.SESSIONVIEWER_MACHINE)


def test_a_global_purge_leaves_the_jids_own_files_and_names_them(client, tree, editor):
    write(tree / ALICE / "memory.md", f"key {KEY}\n", at(10, 0))
    fp = global_leak(client, tree)["fingerprint"]
    page = client.get(reverse("workspace-global-purge", args=[0, fp])).content.decode()
    assert reverse("workspace-purge", args=[0, ALICE, fp]) in page
    assert KEY not in page
    assert (
        "(<code>identity.md</code>, <code>personality.md</code>, <code>instructions.md</code>: 1 state"
        in page
    )
    plan = orjson.loads(client.get(reverse("api-workspace-global-purge", args=[0, fp])).content)
    assert (plan["jid"], plan["also_in_jids"], plan["snapshots"]) == (None, [ALICE], 1)
    global_purge(client, fp)
    memory = MemorySnapshot.objects.filter(jid=ALICE, filename="memory.md").order_by("-id").first()
    assert bytes(memory.content) == f"key {KEY}\n".encode()


def test_an_unknown_global_fingerprint_is_a_404(client, tree, editor):
    write(tree / ALICE / "memory.md", f"key {KEY}\n", at(10, 0))
    index(tree)
    [alices] = orjson.loads(client.get(reverse("api-workspace-memory-findings")).content)["findings"]
    for fp in ("0" * 64, "not-hex", alices["fingerprint"]):  # a JID's own finding is not a global one
        assert client.get(reverse("workspace-global-purge", args=[0, fp])).status_code == 404
        assert client.post(reverse("workspace-global-purge-run", args=[0, fp])).status_code == 404
        assert client.get(reverse("api-workspace-global-purge", args=[0, fp])).status_code == 404


def test_a_global_purge_needs_a_post_and_the_csrf_token(client, tree, editor):
    fp = global_leak(client, tree)["fingerprint"]
    assert client.get(reverse("workspace-global-purge-run", args=[0, fp])).status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(editor)
    assert strict.post(reverse("workspace-global-purge-run", args=[0, fp])).status_code == 403
    assert KEY in everything_stored()


def test_a_reader_who_may_not_edit_cannot_purge_a_global_finding(client, tree, editor):
    fp = global_leak(client, tree)["fingerprint"]
    client.force_login(make_user(READER, permissions=("view_workspace",)))
    assert client.get(reverse("workspace-global-purge", args=[0, fp])).status_code == 403
    assert global_purge(client, fp).status_code == 403
    assert client.get(reverse("api-workspace-global-purge", args=[0, fp])).status_code == 403
    assert KEY in everything_stored()


# What a purge does not touch: the transcripts


def test_the_confirm_page_says_transcripts_are_untouched_and_links_to_a_scan_of_them(client, tree, editor):
    fp = leak(client, tree)
    page = client.get(reverse("workspace-purge", args=[0, ALICE, fp])).content.decode()
    assert "Transcripts are not touched" in page
    scan = reverse("workspace-secrets") + f"?jid={ALICE.replace('@', '%40')}&amp;kind=anthropic_key"
    assert f'href="{scan}"' in page


def test_the_scan_the_confirm_page_links_to_finds_the_value_in_the_jids_history(client, tree, editor):
    append(tree / ALICE / "history.jsonl", message("user", f"my key is {KEY}", at(9, 59), "in-k", ALICE))
    append(
        tree / ALICE / "history.jsonl",
        message("user", "mail me at bob@example.org", at(9, 59), "in-m", ALICE),
    )
    fp = leak(client, tree)
    purge(client, fp)
    scan = orjson.loads(
        client.get(reverse("api-workspace-secrets"), {"jid": ALICE, "kind": "anthropic_key"}).content
    )
    assert [(f["file"], f["kind"]) for f in scan["findings"]] == [(f"{ALICE}/history.jsonl", "anthropic_key")]


def test_the_secrets_report_rejects_an_unknown_kind(client, tree, editor):
    response = client.get(reverse("api-workspace-secrets"), {"kind": "password"})
    assert response.status_code == 400
    assert orjson.loads(response.content)["error"].startswith("kind")


def test_a_global_finding_links_to_its_change_among_the_global_ones(client, tree, editor):
    finding = global_leak(client, tree)
    page = client.get(reverse("workspace-memory-findings")).content.decode()
    assert f"{reverse('workspace-memory-changes')}?scope=global&amp;until=" in page
    assert f"#change-{finding['first_seen']['change']}" in page


def test_a_timeline_excerpt_of_the_turn_hides_a_purged_value_the_transcript_keeps(client, tree, editor):
    write(tree / ALICE / "memory.md", f"Likes tea.\nkey {KEY}\n", at(10, 0))
    append(
        tree / ALICE / "history.jsonl",
        message("user", f"Remember my key {KEY} please", at(10, 0) + 4, "in-1", ALICE),
        message("assistant", f"Noted: {KEY}.", at(10, 0) + 4.01, "out-1"),
    )
    index(tree)
    [finding] = orjson.loads(client.get(reverse("api-workspace-memory-findings"), {"jid": ALICE}).content)[
        "findings"
    ]
    timeline_url = reverse("workspace-memory-timeline", args=[0, ALICE])
    assert KEY in client.get(timeline_url).content.decode()  # the turn's excerpt, before the purge
    purge(client, finding["fingerprint"])
    page = client.get(timeline_url).content.decode()
    assert KEY not in page
    assert "Remember my key [purged] please" in page and "Noted: [purged]." in page
    [turn] = re.findall(r'class="turn-link" href="([^"]+)"', page)
    transcript = client.get(html.unescape(turn)).content.decode()
    assert KEY not in transcript and 'class="secret"' in transcript  # masked on the page (masks.py)
    session_id = int(re.search(r"/sessions/(\d+)/", turn)[1])
    detail = client.get(reverse("api-session-detail", args=[session_id])).content.decode()
    assert KEY in detail  # the transcript keeps it: its JSON, unmasked
