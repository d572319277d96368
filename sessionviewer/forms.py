"""Forms of the persona editor: a file's text with the version it was loaded from."""

from __future__ import annotations

import re

from django import forms

from sessionviewer.workspaces import ABSENT

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
