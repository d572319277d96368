"""The strict query-string fields: what Django's own fields let through, refused with a message."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django import forms
from django.http import QueryDict

from sessionviewer.forms import (
    END_OF_TIME,
    ActivityForm,
    AuditLogForm,
    BadParameter,
    IsoDateTimeField,
    MemoryChangesForm,
    MemorySearchForm,
    NameField,
    SearchField,
    SecretsForm,
    SessionListForm,
    TextSearchField,
    TranscriptForm,
    UntilField,
    WholeNumberField,
)
from sessionviewer.search import parse_query


def error_of(field: forms.Field, value) -> str:
    with pytest.raises(forms.ValidationError) as caught:
        field.clean(value)
    return caught.value.messages[0]


@pytest.mark.parametrize("value", ["²", "٣", "１２", "1٣", " 12", "+1", "1e3", "0x10"])
def test_a_whole_number_is_ascii_digits_only(value):
    assert error_of(WholeNumberField(), value).startswith("expected a whole number")


def test_djangos_integer_field_takes_other_digits_which_is_why_this_field_exists():
    assert forms.IntegerField().clean("１２") == 12


def test_a_whole_number_of_hundreds_of_digits_is_out_of_range_and_not_echoed():
    message = error_of(WholeNumberField(min_value=1, max_value=500), "9" * 400)
    assert message == "must be between 1 and 500"


def test_a_whole_number_is_checked_against_its_bounds():
    assert (
        error_of(WholeNumberField(min_value=1, max_value=500), "501") == "must be between 1 and 500, not 501"
    )
    assert error_of(WholeNumberField(min_value=1), "0").startswith("must be between 1 and")
    assert WholeNumberField(min_value=1, max_value=500).clean("0500") == 500


def test_an_empty_whole_number_is_none():
    assert WholeNumberField().clean("") is None


@pytest.mark.parametrize(
    "value",
    ["9999-99-99", "2025-02-30", "2025-02-08T25:00", "2025-02-08T10:00+99:00", "0000-01-01"],
)
def test_an_impossible_date_or_offset_is_refused(value):
    assert error_of(IsoDateTimeField(), value).startswith("not a real date or time")


@pytest.mark.parametrize("value", ["0001-01-01T00:00+01:00", "9999-12-31T23:00-05:00"])
def test_a_moment_outside_the_years_datetime_holds_once_in_utc_is_refused(value):
    assert error_of(IsoDateTimeField(), value).endswith("is out of range")


@pytest.mark.parametrize("value", ["9999-12-31", "9999-12-31T23:59:59.999999", "9999-12-31T23:59:59.999998"])
def test_an_end_at_the_end_of_time_is_clamped_not_overflowed(value):
    assert UntilField().clean(value) == END_OF_TIME == datetime.max.replace(tzinfo=UTC)


def test_an_end_is_the_exclusive_bound_after_it():
    assert UntilField().clean("2025-02-15") == datetime(2025, 2, 16, tzinfo=UTC)
    assert UntilField().clean("2025-02-15T10:00") == datetime(2025, 2, 15, 10, 0, 0, 1, tzinfo=UTC)


def test_a_date_is_midnight_utc_and_an_offset_is_kept():
    field = IsoDateTimeField()
    assert field.clean("2025-02-15") == datetime(2025, 2, 15, tzinfo=UTC)
    moment = field.clean("2025-02-15T10:00+02:00")
    assert moment == datetime(2025, 2, 15, 10, tzinfo=timezone(timedelta(hours=2)))


def test_a_name_over_255_bytes_is_refused_counting_bytes_not_characters():
    assert NameField().clean("é" * 127) == "é" * 127  # 254 bytes
    assert error_of(NameField(), "é" * 128) == "longer than 255 bytes"


@pytest.mark.parametrize(
    ("value", "start"),
    [
        ('"unclosed', "a quote"),
        ("AND OR NOT", "AND is an operator"),
        ("bread OR butter", "OR is an operator"),
        ("NEAR(a b)", "NEAR is an operator"),
        ("*", "nothing to search for"),
        ("!!", "nothing to search for"),
        ("text:bread", "'text:bread': column filters"),
        ("a\x00b", "contains a control character"),
    ],
)
def test_a_search_with_fts_syntax_is_refused_with_the_reason(value, start):
    assert error_of(SearchField(), value).startswith(start)


@pytest.mark.parametrize("value", ['"OR" bread', "Error: file not found", "--force", "conf*", "or and not"])
def test_a_search_of_words_phrases_and_prefixes_is_accepted(value):
    assert SearchField().clean(value).text == value


def test_a_search_is_cleaned_to_the_query_parsed_once():
    assert SearchField().clean(" app.py ") == parse_query("app.py")
    assert SessionListForm.read({"q": "app.py"})["q"].literals == ("app.py",)


def test_no_search_is_cleaned_to_none():
    assert SearchField().clean("") is None
    assert SessionListForm.read({})["q"] is None


def test_a_search_has_a_length_limit():
    assert error_of(SearchField(), "x" * 1001).startswith("Ensure this value has at most 1000")


def test_a_text_search_keeps_what_was_typed_and_refuses_an_overlong_or_nul_value():
    assert TextSearchField().clean("  OR -word (") == "  OR -word ("
    assert error_of(TextSearchField(), "x" * 1001).startswith("Ensure this value has at most 1000")
    assert error_of(TextSearchField(), "a\x00b").startswith("Null characters are not allowed")


# The session pages' forms: each reads a query string once, and the first bad value names itself


def test_a_page_form_raises_bad_parameter_naming_the_first_bad_value():
    with pytest.raises(BadParameter) as caught:
        SessionListForm.read(QueryDict("format=claude_code&_sort=colour&_page=x"))
    assert caught.value.parameter == "_sort"
    assert str(caught.value).startswith("_sort: expected one of updated, started")


def test_a_choice_of_two_names_both():
    with pytest.raises(BadParameter) as caught:
        ActivityForm.read(QueryDict("_sort_desc=2"))
    assert str(caught.value) == "_sort_desc: expected 0 or 1, not '2'"


def test_the_list_form_reads_a_root_by_id_or_by_path_and_ignores_unknown_parameters():
    assert SessionListForm.read(QueryDict("root=7&colour=red"))["root"] == 7
    assert SessionListForm.read(QueryDict("root=/srv/agents"))["root"] == "/srv/agents"


def test_the_transcript_form_keeps_every_pending_call_and_a_read_offset_past_2_gb():
    params = TranscriptForm.read(QueryDict("_pending=a&_pending=b&_read=3000000000&_after=12"))
    assert params["_pending"] == ["a", "b"]
    assert params["_read"] == 3_000_000_000
    assert params["_after"] == 12
    assert params["leaf"] == "" and params["_offset"] is None


# The workspace pages' query strings


def test_the_secrets_form_trims_the_jid_and_checks_it_is_one_name():
    assert SecretsForm.read(QueryDict("jid=+a%40b.example+"))["jid"] == "a@b.example"
    with pytest.raises(BadParameter) as caught:
        SecretsForm.read(QueryDict("jid=a/b"))
    assert caught.value.parameter == "jid"


def test_the_secrets_form_reads_an_empty_query_as_no_filter():
    assert SecretsForm.read(QueryDict("")) == {"_page": None, "jid": "", "kind": ""}


def test_the_audit_log_form_trims_its_filters():
    params = AuditLogForm.read(QueryDict("root=+%2Fm+&jid=+a+&action=+new+"))
    assert (params["root"], params["jid"], params["action"]) == ("/m", "a", "new")


def test_the_audit_log_form_reports_a_bad_page_before_a_bad_action():
    with pytest.raises(BadParameter) as caught:
        AuditLogForm.read(QueryDict("action=delete&_page=x"))
    assert caught.value.parameter == "_page"


def test_the_memory_changes_form_reports_a_bad_root_before_the_filters():
    with pytest.raises(BadParameter) as caught:
        MemoryChangesForm.read(QueryDict("who=agent&root=x"))
    assert caught.value.parameter == "root"


def test_the_memory_search_keeps_its_text_as_typed():
    assert MemorySearchForm.read(QueryDict("q=+tea+"))["q"] == " tea "
