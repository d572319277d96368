"""Everything in a page that could run (scripts, handlers, javascript: and data: URLs,
frames), for the tests that show a hostile transcript and find none of it."""

import re
from html.parser import HTMLParser

SAFE_IMAGE = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*$")


class ActiveContent(HTMLParser):
    """Everything in a page that could run: scripts, handlers, javascript: and data: URLs, frames."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            value = re.sub(r"[\s\x00-\x1f]", "", value or "").lower()
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}>")
            if name in ("href", "src", "action", "formaction", "xlink:href", "srcdoc"):
                if value.startswith(("javascript:", "vbscript:")):
                    self.found.append(f"<{tag} {name}={value[:40]}>")
                if value.startswith("data:") and not (tag == "img" and SAFE_IMAGE.match(value)):
                    self.found.append(f"<{tag} {name}={value[:40]}>")
        if tag == "script":
            src = dict(attrs).get("src") or ""
            if not src.startswith("/static/js/"):
                self.found.append(f"<script src={src!r}>")
            self.in_script = True
        meta = dict(attrs)
        harmless_meta = meta.keys() <= {"charset", "name", "content"} or (
            meta.get("http-equiv", "").lower() == "content-security-policy"  # it only forbids
        )
        if tag in ("iframe", "object", "embed", "svg", "style", "base", "meta") and not (
            tag == "meta" and harmless_meta
        ):
            self.found.append(f"<{tag}>")

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = False

    def handle_data(self, data):
        if self.in_script and data.strip():
            self.found.append("inline script")


def active_content(body: str) -> list[str]:
    parser = ActiveContent()
    parser.feed(body)
    return parser.found
