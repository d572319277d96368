"""Tests for sessionviewer/render.py. No database: render.py is plain Python."""

import datetime
import json
import re
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pygments.token import STANDARD_TYPES

from sessionviewer import render
from sessionviewer.render import (
    HIGHLIGHT_LIMIT,
    MAX_LINE,
    MEMO,
    Memo,
    clip_long_lines,
    highlight_code,
    highlight_file_lines,
    neutralise,
    render_json,
    render_markdown,
    render_numbered,
    render_plain,
    render_snippet,
    truncate,
)
from sessionviewer.templatetags import transcript, workspace_tags

XSS_CASES = Path(__file__).parent / "fixtures" / "xss" / "cases.txt"

# Written out here rather than imported, so widening render.py's allow-list
# needs a matching change in the tests.
ALLOWED = {
    "a": {"href", "title", "rel"},
    "blockquote": set(),
    "br": set(),
    "code": set(),
    "del": set(),
    "em": set(),
    "h1": set(),
    "h2": set(),
    "h3": set(),
    "h4": set(),
    "h5": set(),
    "h6": set(),
    "hr": set(),
    "li": set(),
    "ol": {"start"},
    "p": set(),
    "pre": {"class"},
    "s": set(),
    "span": {"class"},
    "strong": set(),
    "table": set(),
    "tbody": set(),
    "td": set(),
    "th": set(),
    "thead": set(),
    "tr": set(),
    "ul": set(),
}
ALLOWED_CLASSES = {"pre": {"highlight", "plain"}, "span": {name for name in STANDARD_TYPES.values() if name}}
SAFE_SCHEMES = {"http", "https", "mailto"}
LINK_REL = "noopener noreferrer nofollow"
INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
CODE_POINT = re.compile(r"\{U\+([0-9A-Fa-f]{4,6})(?:\*(\d+))?\}")


def _decode(text: str) -> str:
    return CODE_POINT.sub(lambda m: chr(int(m.group(1), 16)) * int(m.group(2) or 1), text)


def read_cases(path: Path) -> list:
    """Read "description / . / input / . / readable text / ." blocks, as markdown-it-py's fixtures."""
    lines = path.read_text(encoding="utf-8").split("\n")
    cases, i = [], 0
    while i < len(lines):
        if not lines[i].strip() or lines[i].startswith("#"):
            i += 1
            continue
        description = lines[i]
        assert lines[i + 1] == ".", f"line {i + 2}: expected '.' after {description!r}"
        parts, i = [], i + 2
        for _ in range(2):
            end = lines.index(".", i)
            parts.append(_decode("\n".join(lines[i:end])))
            i = end + 1
        cases.append(pytest.param(parts[0], parts[1], id=description))
    return cases


CASES = read_cases(XSS_CASES)


class SafeHTMLChecker(HTMLParser):
    """Collect the text of an HTML fragment and every way it leaves the allow-list."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        if tag not in ALLOWED:
            self.problems.append(f"tag <{tag}>")
            return
        names = [name for name, _ in attrs]
        for name, value in attrs:
            value = value or ""
            if name not in ALLOWED[tag] or name.startswith("on"):
                self.problems.append(f"attribute {name}={value!r} on <{tag}>")
            elif name == "href":
                self._check_url(tag, value)
            elif name == "class" and not set(value.split()) <= ALLOWED_CLASSES[tag]:
                self.problems.append(f"class {value!r} on <{tag}>")
            elif name == "rel" and value != LINK_REL:
                self.problems.append(f"rel {value!r} on <{tag}>")
        if tag == "a" and "rel" not in names:
            self.problems.append("<a> without rel")

    def handle_startendtag(self, tag, attrs) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag) -> None:
        if tag not in ALLOWED:
            self.problems.append(f"end tag </{tag}>")

    def handle_data(self, data) -> None:
        self.text.append(data)

    def handle_comment(self, data) -> None:
        self.problems.append(f"comment {data!r}")

    def handle_decl(self, decl) -> None:
        self.problems.append(f"declaration {decl!r}")

    def handle_pi(self, data) -> None:
        self.problems.append(f"processing instruction {data!r}")

    def unknown_decl(self, data) -> None:
        self.problems.append(f"declaration {data!r}")

    def _check_url(self, tag: str, value: str) -> None:
        # Browsers ignore whitespace and control characters inside a scheme.
        squeezed = re.sub(r"[\x00-\x20\x7f-\x9f]", "", value).lower()
        scheme = re.match(r"([a-z][a-z0-9+.-]*):", squeezed)
        if scheme and scheme.group(1) not in SAFE_SCHEMES:
            self.problems.append(f"url {value!r} on <{tag}>")


def check(output: str) -> str:
    """Assert that output is safe, and return its visible text."""
    checker = SafeHTMLChecker()
    checker.feed(output)
    checker.close()
    assert checker.problems == [], output
    assert not INVISIBLE.search(output)
    # Belt and braces: text may mention these, but only with "<" escaped.
    for needle in ("<script", "<img", "<svg", "<iframe", "<style", "<form", "<input"):
        assert needle not in output.lower(), needle
    return "".join(checker.text)


def visible(text: str) -> str:
    return clip_long_lines(neutralise(text))


# XSS fixtures, through every renderer


@pytest.mark.parametrize(("source", "readable"), CASES)
def test_render_markdown_output_is_safe_and_keeps_readable_text(source, readable):
    text = check(render_markdown(source))
    assert readable in text


@pytest.mark.parametrize(("source", "readable"), CASES)
def test_render_plain_output_is_safe_and_shows_the_text_as_is(source, readable):
    assert check(render_plain(source)) == visible(source)


@pytest.mark.parametrize("language", ["python", "html", "notalanguage", None])
@pytest.mark.parametrize(("source", "readable"), CASES)
def test_highlight_code_output_is_safe_and_shows_the_code_as_is(source, readable, language):
    assert check(highlight_code(source, language)).rstrip("\n") == visible(source).rstrip("\n")


@pytest.mark.parametrize(("source", "readable"), CASES)
def test_render_json_output_is_safe_and_shows_the_value(source, readable):
    expected = visible(json.dumps({"input": source}, indent=2, ensure_ascii=False))
    assert check(render_json({"input": source})).rstrip("\n") == expected


class SnippetChecker(SafeHTMLChecker):
    """A search hit's snippet allows one tag: its own <mark>, bare."""

    def handle_starttag(self, tag, attrs) -> None:
        if tag != "mark" or attrs:
            self.problems.append(f"tag <{tag}> {attrs}")

    def handle_endtag(self, tag) -> None:
        if tag != "mark":
            self.problems.append(f"end tag </{tag}>")


# Every run of letters or digits: a hostile text gets as many marks as it has words.
EVERY_WORD = re.compile(r"[^\W_]+")


@pytest.mark.parametrize("pattern", [EVERY_WORD, re.compile("script|alert|on", re.IGNORECASE), None])
@pytest.mark.parametrize(("source", "readable"), CASES)
def test_render_snippet_output_is_safe_and_marks_only_the_matches(source, readable, pattern):
    html = render_snippet(source, pattern, 10 * len(source) + 100)  # neutralise makes it longer
    checker = SnippetChecker()
    checker.feed(html)
    checker.close()
    assert checker.problems == [], html
    assert not INVISIBLE.search(html)
    assert "".join(checker.text) == " ".join(neutralise(source).split())
    marked = re.findall(r"<mark>(.*?)</mark>", html)
    expected = pattern.findall(" ".join(neutralise(source).split())) if pattern else []
    assert [m.replace("&amp;", "&") for m in marked] == expected


def test_render_snippet_cuts_a_window_around_the_first_match_and_says_so():
    text = "x " * 100 + "<b>zebra</b> " + "y " * 100
    html = render_snippet(text, re.compile("zebra"), 30)
    assert html.startswith("…") and html.endswith("…")
    assert "&lt;b&gt;<mark>zebra</mark>&lt;/b&gt;" in html


class NumberedChecker(SafeHTMLChecker):
    """Numbered code allows only its own markup: pre, code and span, a class, a line's number."""

    def handle_starttag(self, tag, attrs) -> None:
        if tag not in ("pre", "code", "span"):
            self.problems.append(f"tag <{tag}>")
        for name, value in attrs:
            if name not in ("class", "data-n") or (name == "data-n" and not (value or "").isdigit()):
                self.problems.append(f"attribute {name}={value!r} on <{tag}>")


@pytest.mark.parametrize("filename", ["x.py", "page.html", "notes"])
@pytest.mark.parametrize(("source", "readable"), CASES)
def test_numbered_file_lines_are_safe_and_show_the_code_as_is(source, readable, filename):
    lines = source.split("\n")
    html = render_numbered(list(range(1, len(lines) + 1)), highlight_file_lines(lines, filename))
    checker = NumberedChecker()
    checker.feed(html)
    checker.close()
    assert checker.problems == [] and not INVISIBLE.search(html)
    assert "".join(checker.text).rstrip("\n") == visible(source).rstrip("\n")


def test_numbered_file_lines_close_every_span_within_their_line():
    lines = ["def f():", '    s = """a', 'b"""', "    return s"]
    highlighted = highlight_file_lines(lines, "src/x.py")
    assert len(highlighted) == 4
    assert all(line.count("<span") == line.count("</span>") for line in highlighted)
    assert (
        '<span class="s2">b&quot;&quot;&quot;</span>' in highlighted[2]
        or '<span class="s2">b"""</span>' in highlighted[2]
    )
    html = render_numbered([10, 11, 12, 13], highlighted)
    assert html.startswith(
        '<pre class="highlight numbered"><code><span class="cl"><span class="ln" data-n="10"></span>'
    )


def test_xss_fixture_file_has_cases():
    assert len(CASES) >= 40


def test_checker_rejects_unsafe_html():
    # The checker itself must catch what it is meant to catch, or the tests above prove nothing.
    for unsafe in (
        "<script>alert(1)</script>",
        '<img src="x">',
        '<a href="java\tscript:alert(1)" rel="noopener noreferrer nofollow">x</a>',
        '<a href="&#106;avascript:alert(1)" rel="noopener noreferrer nofollow">x</a>',
        '<a href="https://example.com/">no rel</a>',
        '<p onclick="alert(1)">x</p>',
        '<p style="color:red">x</p>',
        '<span class="navbar">x</span>',
        "<!-- comment -->",
    ):
        checker = SafeHTMLChecker()
        checker.feed(unsafe)
        assert checker.problems, unsafe


# Markdown features


def test_render_markdown_renders_headings():
    assert "<h1>Title</h1>" in render_markdown("# Title")
    assert "<h3>Part</h3>" in render_markdown("### Part")


def test_render_markdown_renders_lists():
    html = render_markdown("- one\n- two\n\n1. first\n2. second")
    assert "<ul>\n<li>one</li>\n<li>two</li>\n</ul>" in html
    assert "<ol>\n<li>first</li>\n<li>second</li>\n</ol>" in html


def test_render_markdown_renders_tables():
    html = render_markdown("| a | b |\n|---|--:|\n| 1 | 2 |")
    assert "<th>a</th>" in html
    assert "<td>2</td>" in html


def test_render_markdown_drops_table_alignment_styles():
    assert "style" not in render_markdown("| a | b |\n|:-:|--:|\n| 1 | 2 |")


def test_render_markdown_renders_strikethrough():
    assert "<s>gone</s>" in render_markdown("~~gone~~")


def test_render_markdown_escapes_raw_html():
    assert render_markdown("<b>bold</b>") == "<p>&lt;b&gt;bold&lt;/b&gt;</p>\n"


def test_render_markdown_highlights_python_fences():
    html = render_markdown("```python\ndef f():\n    return 1\n```")
    assert '<pre class="highlight"><code><span class="k">def</span>' in html
    assert '<span class="nf">f</span>' in html


def test_render_markdown_shows_unknown_fence_language_as_escaped_code():
    html = render_markdown("```nosuchlanguage\n<b>x</b>\n```")
    assert html == '<pre class="highlight"><code>&lt;b&gt;x&lt;/b&gt;\n</code></pre>\n'


def test_render_markdown_shows_fence_without_language_as_escaped_code():
    html = render_markdown("```\nif a < b: pass\n```")
    assert html == '<pre class="highlight"><code>if a &lt; b: pass\n</code></pre>\n'


def test_render_markdown_gives_links_rel_noopener_noreferrer_nofollow():
    html = render_markdown("[docs](https://example.com/docs)")
    assert html == ('<p><a href="https://example.com/docs" rel="noopener noreferrer nofollow">docs</a></p>\n')


def test_render_markdown_keeps_relative_fragment_and_mailto_links():
    html = render_markdown("[a](/sessions/1/) [b](#entry-3) [c](mailto:dev@example.com)")
    assert 'href="/sessions/1/"' in html
    assert 'href="#entry-3"' in html
    assert 'href="mailto:dev@example.com"' in html


def test_render_markdown_drops_javascript_href_from_raw_link():
    assert "href" not in render_markdown("[x](javascript:alert(1))")


def test_render_markdown_renders_remote_image_as_link_instead_of_loading_it():
    html = render_markdown('![a cat](https://example.com/cat.png "Cat")')
    assert html == (
        '<p><a href="https://example.com/cat.png" title="Cat" rel="noopener noreferrer nofollow">'
        "[image: a cat]</a></p>\n"
    )


def test_render_markdown_labels_image_without_alt_text():
    assert ">[image]</a>" in render_markdown("![](https://example.com/cat.png)")


def test_render_markdown_renders_image_inside_link_as_its_alt_text():
    html = render_markdown("[![build](https://example.com/badge.svg)](https://example.com/ci)")
    assert html == (
        '<p><a href="https://example.com/ci" rel="noopener noreferrer nofollow">[image: build]</a></p>\n'
    )


def test_render_markdown_drops_href_of_data_image():
    html = render_markdown("![pixel](data:image/png;base64,iVBORw0KGgo=)")
    assert html == '<p><a rel="noopener noreferrer nofollow">[image: pixel]</a></p>\n'


def test_render_markdown_neutralises_control_characters():
    assert render_markdown("a\u202eb") == "<p>a\\u202eb</p>\n"


def test_render_markdown_cuts_very_long_lines():
    html = render_markdown("x" * (MAX_LINE + 5))
    assert "x" * MAX_LINE + " … [line cut: 5 more characters]" in html
    assert "x" * (MAX_LINE + 1) not in html


# neutralise


def test_neutralise_keeps_newlines_tabs_and_ordinary_unicode():
    text = "tab\there\nnew line, café, 日本語, emoji 🎉, שלום"
    assert neutralise(text) == text


def test_neutralise_turns_crlf_into_lf():
    assert neutralise("a\r\nb") == "a\nb"


def test_neutralise_shows_lone_carriage_return():
    assert neutralise("50%\r100%") == "50%\\u000d100%"


@pytest.mark.parametrize(
    "code_point",
    [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F]
    + [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xD800, 0xDFFF],
    ids=lambda cp: f"U+{cp:04X}",
)
def test_neutralise_makes_control_and_bidi_characters_visible(code_point):
    assert neutralise(f"a{chr(code_point)}b") == f"a\\u{code_point:04x}b"


def test_neutralise_output_encodes_as_utf8():
    assert neutralise("broken \ud83d json").encode("utf-8") == b"broken \\ud83d json"


# highlight_code, render_json, render_plain


def test_highlight_code_highlights_python():
    html = highlight_code("import os\nprint('hi')\n", "python")
    assert html.startswith('<pre class="highlight"><code><span class="kn">import</span>')
    assert "<span class=\"s1\">'hi'</span>" in html


def test_highlight_code_ignores_language_case_and_spaces():
    assert highlight_code("x = 1", " Python ") == highlight_code("x = 1", "python")


def test_highlight_code_falls_back_to_escaped_code_for_unknown_language():
    assert (
        highlight_code("<b>&</b>", "klingon")
        == '<pre class="highlight"><code>&lt;b&gt;&amp;&lt;/b&gt;</code></pre>'
    )


def test_highlight_code_without_language_is_plain():
    assert highlight_code("x = 1", None) == '<pre class="highlight"><code>x = 1</code></pre>'


def test_highlight_code_shows_code_over_the_limit_plain():
    html = highlight_code("x = 1\n" * (HIGHLIGHT_LIMIT // 6 + 1), "python")
    assert "<span" not in html


def test_render_json_pretty_prints_and_highlights():
    html = render_json({"path": "a.py", "lines": [1, 2]})
    assert '<span class="nt">"path"</span>' in html
    assert check(html) == '{\n  "path": "a.py",\n  "lines": [\n    1,\n    2\n  ]\n}\n'


def test_render_json_parses_json_text_arguments():
    assert render_json('{"command": "ls"}') == render_json({"command": "ls"})


def test_render_json_keeps_other_strings_as_strings():
    assert check(render_json("not json")) == '"not json"\n'
    assert check(render_json("42")) == '"42"\n'


def test_render_json_shows_deeply_nested_json_text_as_a_string():
    text = "[" * 100_000 + "]" * 100_000
    assert check(render_json(text)).startswith('"[[[')


def test_render_json_accepts_values_json_cannot_encode():
    assert check(render_json({"when": datetime.date(2024, 1, 2)})) == '{\n  "when": "2024-01-02"\n}\n'


def test_render_plain_escapes_html():
    assert render_plain("<b>&\"'</b>") == '<pre class="plain">&lt;b&gt;&amp;"\'&lt;/b&gt;</pre>'


# truncate and clip_long_lines


def test_truncate_leaves_short_text_alone():
    assert truncate("hello", 5) == ("hello", False)


def test_truncate_cuts_long_text_and_says_so():
    assert truncate("hello world", 5) == ("hello", True)


def test_truncate_cuts_between_code_points():
    assert truncate("🎉🎉🎉", 2) == ("🎉🎉", True)


def test_truncate_drops_a_dangling_high_surrogate():
    assert truncate("ab\ud83d\ude00", 3) == ("ab", True)


def test_truncate_rejects_a_negative_limit():
    with pytest.raises(ValueError):
        truncate("x", -1)


def test_clip_long_lines_leaves_short_lines_alone():
    text = "short\n" + "y" * 20 + "\nshort"
    assert clip_long_lines(text, 20) == text


def test_clip_long_lines_cuts_only_long_lines():
    assert clip_long_lines("ok\n" + "z" * 25 + "\nok", 20) == (
        "ok\n" + "z" * 20 + " … [line cut: 5 more characters]\nok"
    )


# Speed: messages are rendered on every page view.


def _fastest(fn, runs: int = 3) -> float:
    timings = []
    for _ in range(runs):
        MEMO.clear()  # time the rendering, not the memo
        start = time.perf_counter()
        fn()
        timings.append(time.perf_counter() - start)
    return min(timings)


@pytest.mark.timed
def test_render_plain_handles_100kb_under_50ms():
    text = "2024-01-01 12:00:00 INFO worker started job 1234 on host build-7\n" * 1600
    assert _fastest(lambda: render_plain(text)) < 0.05


@pytest.mark.timed
def test_highlight_code_handles_100kb_over_the_limit_under_50ms():
    code = "def f(x):\n    return x * 2  # double\n" * 2700
    assert _fastest(lambda: highlight_code(code, "python")) < 0.05


@pytest.mark.timed
def test_render_markdown_handles_100kb_of_plain_prose_under_50ms():
    text = (
        "An assistant writes a long paragraph of plain words about what it did next. " * 12 + "\n\n"
    ) * 110
    assert _fastest(lambda: render_markdown(text)) < 0.05


@pytest.mark.timed
def test_render_markdown_stays_linear_with_many_images_in_one_paragraph():
    line = "![a](https://example.com/a.png) " * 100 + "\n"
    small, large = _fastest(lambda: render_markdown(line * 4)), _fastest(lambda: render_markdown(line * 16))
    # Four times the images; a quadratic renderer would take sixteen times as long.
    assert large < 8 * small


def test_the_image_types_shown_inline_are_defined_once_in_render():
    # The transcript's inline images and the workspace file preview must never drift apart.
    from sessionviewer import render
    from sessionviewer.templatetags import transcript as transcript_tags
    from sessionviewer.views import workspaces as workspace_views

    assert sorted(render.IMAGE_TYPES) == ["image/gif", "image/jpeg", "image/png", "image/webp"]
    assert workspace_views.IMAGE_TYPES is render.IMAGE_TYPES
    assert "IMAGE_TYPES" not in vars(transcript_tags)


def test_both_tag_libraries_share_the_one_markdown_filter():
    assert workspace_tags.register.filters["markdown"] is transcript.register.filters["markdown"]


def test_markdown_rendered_again_comes_from_the_memo():
    MEMO.clear()
    text = "A reply with *emphasis* and `code`, shown on every reload."
    first = render_markdown(text)
    assert render_markdown(text) is first
    assert (MEMO.hits, MEMO.misses) == (1, 1)


def test_a_tool_calls_json_rendered_again_comes_from_the_memo():
    MEMO.clear()
    first = render_json({"command": "ls -la", "timeout": 120})
    assert render_json('{"command": "ls -la", "timeout": 120}') is first  # the same JSON, as text
    assert (MEMO.hits, MEMO.misses) == (1, 1)
    changed = render_json({"command": "ls -la", "timeout": 121})
    assert changed is not first and "121" in changed


def test_a_diff_rendered_again_comes_from_the_memo():
    from sessionviewer.transcripts import tools

    MEMO.clear()
    lines = [tools.DiffLine("del", "port = 80", 3, None), tools.DiffLine("add", "port = 8080", None, 3)]
    first = render.render_diff(lines, numbered=True)
    again = [tools.DiffLine("del", "port = 80", 3, None), tools.DiffLine("add", "port = 8080", None, 3)]
    assert render.render_diff(again, numbered=True) is first
    assert MEMO.hits == 1


def test_a_diff_whose_line_changed_is_marked_anew():
    from sessionviewer.transcripts import tools

    render.render_diff([tools.DiffLine("del", "port = 80"), tools.DiffLine("add", "port = 8080")])
    html = render.render_diff([tools.DiffLine("del", "port = 80"), tools.DiffLine("add", "port = 9090")])
    assert '<span class="wa">9090</span>' in html


def test_a_diff_numbered_or_not_is_kept_apart():
    from sessionviewer.transcripts import tools

    lines = [tools.DiffLine("ctx", "same", 1, 1)]
    assert "numbered" in render.render_diff(lines, numbered=True)
    assert "numbered" not in render.render_diff(lines, numbered=False)


def test_markdown_after_a_limit_changed_is_not_what_the_old_limit_made(monkeypatch):
    text = "```python\nanswer = 42\n```"
    assert '<span class="n">answer</span>' in render_markdown(text)
    monkeypatch.setattr(render, "HIGHLIGHT_LIMIT", 5)  # the code is now too long to highlight
    assert render_markdown(text) == '<pre class="highlight"><code>answer = 42\n</code></pre>\n'


def test_the_memo_lets_the_least_recently_used_go_past_its_budget():
    memo = Memo(budget=100, largest=60)
    memo.keep(("a",), "x" * 30, 10)
    memo.keep(("b",), "y" * 30, 10)
    assert memo.get(("a",)) == "x" * 30  # a is now the more recently used
    memo.keep(("c",), "z" * 30, 10)
    assert memo.get(("b",)) is None
    assert memo.get(("a",)) == "x" * 30 and memo.get(("c",)) == "z" * 30
    assert memo.size == 80 and len(memo) == 2


def test_the_memo_never_keeps_an_item_over_its_largest():
    memo = Memo(budget=100, largest=60)
    assert memo.keep(("big",), "x" * 55, 10) == "x" * 55
    assert memo.get(("big",)) is None and memo.size == 0


def test_the_memo_stays_within_its_budget_over_a_whole_export():
    MEMO.clear()
    for n in range(2_000):
        render_markdown(f"Message {n}: " + "words of a long reply " * 400)
    assert 0 < MEMO.size <= MEMO.budget


def test_html_made_while_reading_only_is_not_kept_but_what_is_kept_is_read():
    MEMO.clear()
    kept = render_markdown("Shown on a screen first.")
    with MEMO.reading_only():
        assert render_markdown("Shown on a screen first.") is kept
        assert render_markdown("Only *exported*.") == "<p>Only <em>exported</em>.</p>\n"
    assert len(MEMO) == 1 and MEMO.hits == 1
    render_markdown("Only *exported*.")
    assert len(MEMO) == 2  # kept again once out of it
