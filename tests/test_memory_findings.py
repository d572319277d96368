"""What should not be there: the secrets report run on every recorded change, the changes
that brought a finding flagged, and each finding's history (first appearance, turn, still
there), on memory trees whose agent writes have chosen mtimes."""

from __future__ import annotations

import orjson
import pytest
from django.urls import reverse

from sessionviewer.models import KeyCheck, MemorySnapshot

from .memory_turns import ALICE, at, direct_turn, fact, index, timeline, write
from .users import NOBODY, make_user

pytestmark = pytest.mark.django_db

KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"
PHONE = "+33 6 12 34 56 78"


def findings(client, **params) -> dict:
    response = client.get(reverse("api-workspace-memory-findings"), params)
    assert response.status_code == 200, response.content
    return orjson.loads(response.content)


def test_a_change_that_adds_a_key_is_flagged_in_the_timeline_masked(client, tree, editor):
    write(tree / ALICE / "memory.md", f"Likes tea.\nAPI key: {KEY}\n", at(10, 0))
    index(tree)
    change = timeline(client)["changes"][0]
    assert [(f["kind"], f["line"]) for f in change["new_findings"]] == [("anthropic_key", 2)]
    assert KEY not in orjson.dumps(change["new_findings"]).decode()


def test_an_iban_and_a_card_number_the_agent_stored_are_flagged(client, tree, editor):
    iban, card = "FR14 2004 1010 0505 0001 3M02 606", "4111 1111 1111 1111"
    write(tree / ALICE / "user.md", f"Pays rent from {iban}.\nCard on file: {card}\n", at(10, 0))
    index(tree)
    change = timeline(client)["changes"][0]
    assert [(f["kind"], f["line"]) for f in change["new_findings"]] == [("iban", 1), ("card_number", 2)]
    kept = orjson.dumps(change["new_findings"]).decode()  # the diff itself shows the file as written
    assert iban not in kept and card not in kept and "**** **** **** 1111" in kept


def test_a_change_that_only_moves_a_finding_brings_nothing_new(client, tree, editor):
    write(tree / ALICE / "memory.md", f"Call {PHONE}\n", at(10, 0))
    index(tree)
    write(tree / ALICE / "memory.md", f"Note.\nCall {PHONE}\n", at(11, 0))
    index(tree)
    latest, earlier = timeline(client, file="memory.md")["changes"][:2]
    assert latest["new_findings"] == []
    assert [f["kind"] for f in earlier["new_findings"]] == ["phone"]


def test_the_jids_own_address_is_no_finding(client, tree, editor):
    write(tree / ALICE / "user.md", f"Mail: {ALICE}\n", at(10, 0))
    index(tree)
    assert timeline(client, file="user.md")["changes"][0]["new_findings"] == []


def test_every_jids_changes_flag_the_change_that_added_a_finding(client, tree, editor):
    write(tree / ALICE / "memory.md", "IBAN? no, mail bob@example.org\n", at(10, 0))
    index(tree)
    page = client.get(reverse("workspace-memory-changes")).content.decode()
    assert "1 new finding" in page
    assert '<code>b**@example.org</code> <span class="muted">line 1</span>' in page


def test_a_finding_shows_when_it_first_appeared_and_in_which_turn(client, tree, editor):
    direct_turn(tree, 1, at(10, 0), fact("api", KEY, at(10, 0, 2)))
    index(tree)
    [finding] = findings(client)["findings"]
    assert (finding["jid"], finding["kind"], finding["still_present"]) == (ALICE, "anthropic_key", True)
    first = finding["first_seen"]
    assert (first["file"], first["line"], first["who"]) == ("knowledge.jsonl", 1, "outside")
    assert (first["link"]["turn"]["user_entry"], first["link"]["turn"]["reply_entry"]) == ("in-1", "out-1")
    assert finding["present_in"] == [{"file": "knowledge.jsonl", "line": 1, "column": 25}]
    assert KEY not in orjson.dumps(finding).decode()


def test_a_removed_finding_is_said_gone_with_its_first_appearance_kept(client, tree, editor):
    write(tree / ALICE / "memory.md", f"Call {PHONE}\n", at(10, 0))
    index(tree)
    write(tree / ALICE / "memory.md", "Call later.\n", at(11, 0))
    index(tree)
    [finding] = findings(client)["findings"]
    assert (finding["still_present"], finding["present_in"]) == (False, [])
    page = client.get(reverse("workspace-memory-findings")).content.decode()
    assert "No longer in the files" in page


def test_a_finding_opens_the_editor_at_its_line_or_the_source_page_for_knowledge(client, tree, editor):
    write(tree / ALICE / "memory.md", f"Likes tea.\n\nCall {PHONE}\n", at(10, 0))
    write(tree / ALICE / "knowledge.jsonl", fact("api", KEY, at(10, 0)), at(10, 0))
    index(tree)
    urls = {f["present_in"][0]["file"]: f["open_url"] for f in findings(client)["findings"]}
    assert urls["memory.md"] == reverse("workspace-edit", args=[0, ALICE, "memory.md"]) + "?line=3"
    assert urls["knowledge.jsonl"] == reverse("workspace-source", args=[0, ALICE, "knowledge.jsonl"]) + "#L1"
    assert {f["forget_url"] for f in findings(client)["findings"]} == {
        reverse("workspace-forget", args=[0, ALICE])
    }


def test_one_value_in_two_files_is_one_finding_opened_where_the_editor_can_edit_it(client, tree, editor):
    write(tree / ALICE / "knowledge.jsonl", fact("phone", PHONE, at(10, 0)), at(10, 0))
    write(tree / ALICE / "memory.md", f"Call {PHONE}\n", at(10, 1))
    index(tree)
    [finding] = findings(client)["findings"]
    assert {p["file"] for p in finding["present_in"]} == {"knowledge.jsonl", "memory.md"}
    assert finding["open_url"] == reverse("workspace-edit", args=[0, ALICE, "memory.md"]) + "?line=1"


def test_the_editor_highlights_the_line_it_is_opened_at(client, tree, editor):
    write(tree / ALICE / "memory.md", f"Likes tea.\n\nCall {PHONE}\n", at(10, 0))
    page = client.get(reverse("workspace-edit", args=[0, ALICE, "memory.md"]), {"line": 3}).content.decode()
    assert 'data-line="3"' in page
    assert f'<span class="line target"><span class="lineno">3</span>Call {PHONE}</span>' in page


def test_a_bad_line_is_a_400_naming_it(client, tree, editor):
    response = client.get(reverse("workspace-edit", args=[0, ALICE, "memory.md"]), {"line": "zero"})
    assert response.status_code == 400
    assert b"line" in response.content


def test_findings_filter_by_jid_and_kind(client, tree, editor):
    write(tree / ALICE / "memory.md", f"Call {PHONE}, key {KEY}\n", at(10, 0))
    index(tree)
    assert [f["kind"] for f in findings(client, kind="phone")["findings"]] == ["phone"]
    assert findings(client, jid="nobody@example.com")["findings"] == []
    assert client.get(reverse("api-workspace-memory-findings"), {"kind": "gossip"}).status_code == 400


def test_a_snapshot_keeps_its_findings_masked_and_fingerprinted_never_the_value(tree):
    write(tree / ALICE / "memory.md", f"key {KEY}\n", at(10, 0))
    index(tree)
    snapshot = MemorySnapshot.objects.get(jid=ALICE, filename="memory.md", current=True)
    [kept] = snapshot.findings
    assert kept["kind"] == "anthropic_key" and len(kept["fp"]) == 64
    assert KEY not in orjson.dumps(snapshot.findings).decode()


def test_a_state_recorded_before_findings_were_kept_is_scanned_when_needed(client, tree, editor):
    write(tree / ALICE / "memory.md", f"Call {PHONE}\n", at(10, 0))
    index(tree)
    MemorySnapshot.objects.update(findings=None)
    assert [f["kind"] for f in findings(client)["findings"]] == ["phone"]
    assert MemorySnapshot.objects.get(jid=ALICE, filename="memory.md", current=True).findings


def test_someone_who_may_not_read_workspaces_gets_no_findings(client, tree):
    client.force_login(make_user(NOBODY))
    assert client.get(reverse("workspace-memory-findings")).status_code == 403
    assert client.get(reverse("api-workspace-memory-findings")).status_code == 403


def test_the_findings_say_so_when_secret_key_is_not_the_one_they_were_made_with(client, tree, editor):
    write(tree / ALICE / "memory.md", f"Call {PHONE}\n", at(10, 0))
    index(tree)
    assert findings(client)["key_mismatch"] == ""
    KeyCheck.objects.update(digest="0" * 64)  # as an indexer with another key recorded it
    assert "needs the same SECRET_KEY" in findings(client)["key_mismatch"]
    page = client.get(reverse("workspace-memory-findings")).content.decode()
    assert "needs the same SECRET_KEY" in page


def test_a_snapshots_findings_list_random_strings_only_with_the_high_entropy_setting(settings):
    # As the secrets report does (test_workspace_views): findings over time and the report agree.
    content = b"blob Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx\n"
    settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY = False
    assert MemorySnapshot.scan(content, "") == []
    settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY = True
    assert [finding["kind"] for finding in MemorySnapshot.scan(content, "")] == ["high_entropy"]
