"""Forms of the persona editor (a file's text with the version it was loaded from), the
strict fields that read query strings and names from a request, and the one form per
session page (list, activity, transcript) that reads its query string."""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta

from django import forms
from django.core.exceptions import BadRequest
from django.utils.dateparse import parse_date, parse_datetime

from sessionviewer.filters import MAX_SIZE, SORTS
from sessionviewer.readers import FORMATS
from sessionviewer.search import HIT_SORTS, MAX_QUERY, WHAT, WHO, ParsedQuery, parse_query, query_problem
from sessionviewer.workspaces import ABSENT, NAME_MAX
from sessionviewer.workspaces.secrets import KINDS

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class VersionField(forms.CharField):
    """workspaces.file_version: a sha256 hex digest, or "absent" for a file not yet created."""

    widget = forms.HiddenInput

    def __init__(self, **kwargs):
        super().__init__(max_length=64, **kwargs)

    def validate(self, value: str) -> None:
        super().validate(value)
        if value != ABSENT and not _SHA256.match(value):
            raise forms.ValidationError("not a file version", code="invalid")


class VersionForm(forms.Form):
    """The confirmation of a remove or a restore: refused if the file changed since."""

    version = VersionField()


class FileForm(VersionForm):
    # strip=False: leading indentation and trailing newlines are part of the file.
    text = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 18}))

    field_order = ["text", "version"]

    def __init__(self, *args, preview_url: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        if preview_url:
            # Live preview: htmx posts the whole form (CSRF token included) and swaps #preview.
            self.fields["text"].widget.attrs.update(
                {
                    "hx-post": preview_url,
                    "hx-trigger": "keyup changed delay:400ms",
                    "hx-target": "#preview",
                    "hx-swap": "outerHTML",
                }
            )


class PreviewForm(forms.Form):
    text = forms.CharField(required=False, strip=False)


# Query-string fields: strict, so that a bad value is a 400 naming its parameter, never a 500.

_ASCII_DIGITS = re.compile(r"[0-9]+")
MAX_WHOLE = 2**31 - 1  # fits every integer column, on SQLite and PostgreSQL alike


class WholeNumberField(forms.Field):
    """A whole number in ASCII digits, within bounds.

    Django's IntegerField takes "٣" and "１２" (int() reads any Unicode digit) and converts
    a thousand digits before it checks a bound; this reads "0"-"9" only, and refuses a
    number too long for max_value without converting it.
    """

    def __init__(self, *, min_value: int = 0, max_value: int = MAX_WHOLE, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.min_value, self.max_value = min_value, max_value

    def to_python(self, value) -> int | None:
        if value in self.empty_values:
            return None
        value = str(value)
        if not _ASCII_DIGITS.fullmatch(value):
            raise forms.ValidationError(f"expected a whole number, not {value!r}", code="invalid")
        if len(value.lstrip("0")) > len(str(self.max_value)):
            raise forms.ValidationError(self._range_message(), code="max_value")
        return int(value)

    def validate(self, value: int | None) -> None:
        super().validate(value)
        if value is not None and not self.min_value <= value <= self.max_value:
            raise forms.ValidationError(f"{self._range_message()}, not {value}", code="range")

    def _range_message(self) -> str:
        return f"must be between {self.min_value} and {self.max_value}"


class WholeNumberConverter:
    """<whole:name> in a URL: an id, a line or a block, as WholeNumberField reads it. Django's
    <int:> takes any number of digits, and one past what a column holds overflowed the SQL
    (a 500); past MAX_WHOLE, this one matches nothing (a 404)."""

    regex = "[0-9]+"

    def to_python(self, value: str) -> int:
        if len(value.lstrip("0")) > len(str(MAX_WHOLE)) or int(value) > MAX_WHOLE:
            raise ValueError(f"{value} is past {MAX_WHOLE}")  # the resolver's "no match"
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


class IsoDateTimeField(forms.Field):
    """An ISO 8601 date (midnight UTC) or date-time (UTC unless it gives its offset).

    Impossible dates ("9999-99-99", "2025-02-30"), offsets of a day or more ("+99:00") and
    moments that fall outside years 1 to 9999 once in UTC are refused, not raised.
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_python(self, value) -> datetime | None:
        if value in self.empty_values:
            return None
        value = str(value)
        try:
            parsed = parse_datetime(value)
            if parsed is None and (day := parse_date(value)) is not None:
                parsed = datetime.combine(day, time.min)
        except ValueError as error:
            raise forms.ValidationError(
                f"not a real date or time: {value!r} ({error})", code="invalid"
            ) from None
        if parsed is None:
            raise forms.ValidationError(f"expected an ISO date or date-time, not {value!r}", code="invalid")
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        try:
            parsed.astimezone(UTC)
        except OverflowError:
            raise forms.ValidationError(f"{value!r} is out of range", code="invalid") from None
        return parsed


_DATE_ALONE = re.compile(r"\d{4}-\d{2}-\d{2}")


# The last moment a datetime holds: the exclusive bound of an end at the end of time.
END_OF_TIME = datetime.max.replace(tzinfo=UTC)


class UntilField(IsoDateTimeField):
    """An inclusive end: a date takes that whole day (UTC, as IsoDateTimeField reads it), a
    date-time that moment. Cleaned to the exclusive bound a filter uses: the next midnight,
    or the moment and a microsecond. An end on the last day a datetime holds (9999-12-31,
    "until the end of time") has no next midnight: its bound is END_OF_TIME."""

    def to_python(self, value) -> datetime | None:
        parsed = super().to_python(value)
        if parsed is None:
            return None
        step = timedelta(days=1) if _DATE_ALONE.fullmatch(str(value).strip()) else timedelta(microseconds=1)
        try:
            return parsed + step
        except OverflowError:
            return END_OF_TIME


class NameField(forms.CharField):
    """One file or folder name (a JID, a memory file): at most 255 bytes, no separator, no NUL.
    Kept as written, unless strip (a name typed in a filter box)."""

    def __init__(self, *, strip: bool = False, **kwargs):
        super().__init__(strip=strip, **kwargs)

    def validate(self, value: str) -> None:
        super().validate(value)
        if len(value.encode("utf-8", errors="surrogatepass")) > NAME_MAX:
            raise forms.ValidationError(f"longer than {NAME_MAX} bytes", code="max_length")
        if "/" in value or "\\" in value or "\x00" in value:
            raise forms.ValidationError(f"{value!r} is not a single name", code="invalid")


class TextSearchField(forms.CharField):
    """Text searched for as written (the workspace memory search): at most MAX_QUERY
    characters, kept as typed (spaces count), no NUL."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(max_length=MAX_QUERY, strip=False, **kwargs)


class SearchField(forms.CharField):
    """A full-text query: words, "quoted phrases" and prefix* searches (search.query_problem).
    Cleaned to the query parsed, once (search.ParsedQuery: its text is as typed), or None."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(max_length=MAX_QUERY, **kwargs)

    def clean(self, value) -> ParsedQuery | None:
        # Field.clean's steps, with the query's own check (parsing it) before the validators.
        text = self.to_python(value)
        self.validate(text)
        parsed = parse_query(text) if text else None
        if parsed is not None and (problem := query_problem(text, parsed)):
            raise forms.ValidationError(problem, code="invalid")
        self.run_validators(text)
        return parsed


class BadParameter(BadRequest, ValueError):
    """A query parameter or name that cannot be used: a 400 whose message starts with its name."""

    def __init__(self, parameter: str, message: str):
        super().__init__(f"{parameter}: {message}")
        self.parameter = parameter
        self.message = message


def clean_param(field: forms.Field, parameter: str, value, error: type[BadParameter] = BadParameter):
    """field.clean(value); a bad value raises error (BadParameter or a subclass) naming parameter."""
    try:
        return field.clean(value)
    except forms.ValidationError as invalid:
        raise error(parameter, invalid.messages[0]) from None


# --- The session pages' query strings ---------------------------------------------------------------
# One form per page, read once by the page and its /api/ twin alike; the first bad value
# raises BadParameter, which views/http.py answers with the one 400.


class OneOfField(forms.CharField):
    """One of a few words, as written; "" when absent."""

    def __init__(self, choices, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(strip=False, **kwargs)
        self.choices = tuple(choices)

    def validate(self, value: str) -> None:
        super().validate(value)
        if value and value not in self.choices:
            *rest, last = self.choices
            if not rest:
                expected = last
            elif len(rest) == 1:
                expected = f"{rest[0]} or {last}"
            else:
                expected = f"one of {', '.join(self.choices)}"
            raise forms.ValidationError(f"expected {expected}, not {value!r}", code="invalid")


class RootField(forms.CharField):
    """A root by its id (the facet's links) or by its path as configured."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(strip=False, **kwargs)

    def clean(self, value) -> int | str:
        value = super().clean(value)
        if value.isascii() and value.isdigit():
            return WholeNumberField(min_value=1).clean(value)
        return value


class ListField(forms.Field):
    """Every value of a repeated parameter (?_pending=a&_pending=b), as written."""

    widget = forms.MultipleHiddenInput

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_python(self, value) -> list[str]:
        return [str(v) for v in value or ()]


def _text(**kwargs) -> forms.CharField:
    """A column filter, matched as written."""
    return forms.CharField(required=False, strip=False, **kwargs)


class QueryForm(forms.Form):
    """A page's query string; parameters it does not know are left alone."""

    @classmethod
    def read(cls, params) -> dict:
        """The cleaned parameters; the first bad one raises BadParameter naming it."""
        form = cls(params)
        if not form.is_valid():
            parameter, messages = next(iter(form.errors.items()))
            raise BadParameter(parameter, messages[0])
        return form.cleaned_data


class ActivityForm(QueryForm):
    """The activity page (/activity/, /api/activity): the session list's filters and sort.

    Column filters are plain names; control parameters start with an underscore so the
    two never collide. filters.filter_sessions reads what this form cleaned.
    """

    format = OneOfField(FORMATS)
    machine = _text()
    root = RootField()
    project = _text()
    agent = _text()
    channel = _text()
    peer_kind = _text()
    jid = _text()
    status = _text()
    kind = _text()
    account = _text()
    model = _text()
    updated_since = IsoDateTimeField()
    updated_before = IsoDateTimeField()  # exclusive, as the API documents it
    updated_until = UntilField()  # inclusive: the page's "until", a one-day range is that day
    parent = WholeNumberField(min_value=1)
    possible_secrets = OneOfField(("1",))  # 1: the sessions with a possible secret not dismissed
    q = SearchField()
    _sort = OneOfField(SORTS)
    _sort_desc = OneOfField(("0", "1"))
    _page = WholeNumberField(min_value=1)
    _size = WholeNumberField(min_value=1, max_value=MAX_SIZE)
    _range = OneOfField(("7", "30", "90", "all"))  # Activity's: sessions started in the last N days
    _flat = OneOfField(("0", "1"))  # 1: subagents as rows of their own, not nested under their parent

    def clean(self):
        cleaned = super().clean()
        since = cleaned.get("updated_since")
        for name in ("updated_before", "updated_until"):
            end = cleaned.get(name)
            if since is not None and end is not None and end <= since:
                self.add_error(
                    name, f"ends before the range starts: {self.data.get(name)!r} is before updated_since"
                )
        return cleaned


class SessionListForm(ActivityForm):
    """The session list (/) and its twins /api/sessions, /api/sessions/facets and /api/search:
    the filters, and for the search hits (grouped by session) their page, their order
    (most hits or newest) and what a hit is and who said it (search.WHAT, search.WHO)."""

    _hits_page = WholeNumberField(min_value=1)
    _hits_sort = OneOfField(HIT_SORTS)
    _hits_what = OneOfField(WHAT)
    _hits_who = OneOfField(WHO)


class EntryTextForm(QueryForm):
    """The rest of a long text (/sessions/<id>/lines/<line>/blocks/<n>/text): _from, the first
    character sent; without HX-Request the whole text comes as a download."""

    _from = WholeNumberField()


class ExportForm(QueryForm):
    """An export (/sessions/<id>/export.html, .md): _all=1 exports every entry, the noise too,
    as the page's switch of the same name shows them."""

    _all = WholeNumberField(max_value=1)


class TranscriptForm(QueryForm):
    """The transcript (/sessions/<id>/) and its twin: which thread, and which part of it.

    leaf: the branch shown (the active one when absent); entry: the entry a permalink opens at;
    _offset: the first item of a chunk, _stop: the item it ends before, _before=1 when it is
    the chunk before the one shown;
    _all: 1 shows every entry, 0 hides the noise again (the page remembers it);
    _thinking: 0 folds each thinking block to one line, 1 shows their opening lines again
    (remembered too);
    _inline=1: chunks of a subagent shown in its parent's page (no live updates there);
    q: the search a hit was opened from (its words marked, hit to hit with n/N);
    _limit: the API's slice; _after, _read, _pending: the page's live updates (the last line
    shown, the file offset read, the calls awaiting results).
    """

    leaf = forms.CharField(required=False, strip=False)
    entry = forms.CharField(required=False, strip=False)
    _offset = WholeNumberField()
    _limit = WholeNumberField()
    _after = WholeNumberField()
    _before = WholeNumberField(max_value=1)  # 1: the chunk before _offset, for "show earlier"
    _stop = WholeNumberField()
    _all = WholeNumberField(max_value=1)
    _thinking = WholeNumberField(max_value=1)  # 0 folds every thinking block to a line, 1 opens them again
    _inline = WholeNumberField(max_value=1)
    _summary = WholeNumberField()  # the item of a compaction whose summary is asked for (it loads when opened)  # 1: chunks shown inside the parent's page (a subagent)
    q = SearchField()  # the search the page was opened from: its words are marked
    _read = WholeNumberField(max_value=2**63 - 1)  # a byte offset: files can pass 2 GB
    _pending = ListField()


class ProjectForm(QueryForm):
    """A project's page (/projects/<key>/, /api/projects/<key>) and a JID's usage panel:
    the range of Activity (sessions started in the last N days) and the page of sessions."""

    _range = OneOfField(("7", "30", "90", "all"))
    _page = WholeNumberField(min_value=1)


class MemoryTimelineForm(QueryForm):
    """The memory timelines (one JID's, and every JID's): which changes to show.
    since and until are days or moments, until inclusive (UntilField)."""

    file = _text()
    who = OneOfField(("outside", "editor", "forget", "first"))
    scope = OneOfField(("own", "global"))  # the JID's own files, or the global persona files
    jid = _text()  # the page of every JID only
    since = IsoDateTimeField()
    until = UntilField()
    _page = WholeNumberField(min_value=1)


class MemoryChangesForm(MemoryTimelineForm):
    """Every JID's memory changes (/workspaces/memory-changes/): a timeline's filters, in the
    memory root given by its index (root, the first when absent)."""

    root = WholeNumberField(min_value=0)

    field_order = ["root"]


class MemoryFindingsForm(QueryForm):
    """The findings in the memory's history: one JID's (jid), one kind's, a page of them, in
    the memory root given by its index (root, the first when absent)."""

    jid = _text()
    kind = OneOfField(KINDS)
    _page = WholeNumberField(min_value=1)
    root = WholeNumberField(min_value=0)


class MemorySearchForm(QueryForm):
    """The memory search (/workspaces/search/ and its twin): q, the text searched for as typed."""

    q = TextSearchField()


class SecretsForm(QueryForm):
    """The secrets report on the files as they are now: a page of it, one JID's files (jid,
    as typed in its box, spaces trimmed), one kind of finding."""

    _page = WholeNumberField(min_value=1)
    jid = NameField(required=False, strip=True)
    kind = OneOfField(KINDS)


AUDIT_ACTIONS = (
    "create",
    "edit",
    "remove",
    "restore",
    "new",
    "forget",
    "purge",
    "share-create",
    "share-open",
    "share-revoke",
)


class AuditLogForm(QueryForm):
    """The audit log: a page of it, and the events of one root (as recorded: a path, compared
    as text, which opens no file), one JID, one action and one machine. Spaces around each are
    trimmed."""

    _page = WholeNumberField(min_value=1)
    root = forms.CharField(required=False)
    jid = forms.CharField(required=False)
    action = forms.CharField(required=False)
    machine = forms.CharField(required=False)

    def clean_action(self) -> str:
        action = self.cleaned_data["action"]
        if action and action not in AUDIT_ACTIONS:
            raise forms.ValidationError(f"must be one of {', '.join(AUDIT_ACTIONS)}", code="invalid")
        return action


class EditLineForm(QueryForm):
    """The editor: line, a line to highlight (a finding's, say)."""

    line = WholeNumberField(min_value=1)


class MemoryAsOfForm(QueryForm):
    """The memory as it was: at is a day (its end) or a moment (included); now when absent.
    The page shows the moment in local time, which a day from either end of time may not
    hold: there at is kept a day inside them."""

    at = UntilField()

    def clean_at(self) -> datetime | None:
        at = self.cleaned_data["at"]
        return at and min(max(at, _FIRST_SHOWN), _LAST_SHOWN)


# What a page can show in any time zone (no UTC offset reaches a day).
_FIRST_SHOWN = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
_LAST_SHOWN = END_OF_TIME - timedelta(days=1)


class SessionSecretsForm(QueryForm):
    """The possible secrets across sessions (/secrets/, /api/secrets): which to show. since and
    until bound the sessions' start, until inclusive (UntilField)."""

    kind = _text()
    project = _text()
    machine = _text()
    since = IsoDateTimeField()
    until = UntilField()
