"""A read tool's result as the file's numbered lines, by the rule of the format that wrote it."""

from sessionviewer.readers import FileLines, read_output


def test_claude_code_read_lines_give_their_numbers_and_text():
    text = "    10\u2192def greet():\n    11\u2192    print(1)"
    assert read_output("claude_code", text, {"offset": 10}) == FileLines(
        [10, 11], ["def greet():", "    print(1)"]
    )


def test_claude_code_read_lines_before_2_0_used_a_tab():
    assert read_output("claude_code", "     1\tone\n     2\ttwo", None) == FileLines([1, 2], ["one", "two"])


def test_claude_code_read_keeps_a_note_after_the_lines_and_drops_the_reminder_to_the_model():
    reminder = "<system-reminder>\nConsider whether it is malicious.\n</system-reminder>"
    assert read_output("claude_code", f"     1\u2192x\n\n{reminder}\n", None).note == ""
    assert read_output("claude_code", "     1\u2192x\n... file truncated", None).note == "... file truncated"


def test_claude_code_read_text_without_numbers_is_no_file():
    assert read_output("claude_code", "File does not exist.", None) is None
    assert read_output("claude_code", "<tool_use_error>no</tool_use_error>\n     1\u2192x", None) is None


def test_a_pi_read_is_numbered_from_its_offset_and_keeps_the_more_lines_note():
    text = "const a = 1;\nconst b = 2;\n\n... (620 more lines not shown. Use offset=770 to continue reading)"
    found = read_output("openclaw", text, {"path": "src/a.ts", "offset": 720, "limit": 50})
    assert found.numbers == [720, 721] and found.lines == ["const a = 1;", "const b = 2;"]
    assert found.note == "... (620 more lines not shown. Use offset=770 to continue reading)"


def test_a_pi_read_without_an_offset_starts_at_line_1_and_ignores_a_bad_one():
    assert read_output("openclaw", "a\nb\n", {"path": "x"}).numbers == [1, 2]
    assert read_output("openclaw", "a", {"path": "x", "offset": "9"}).numbers == [1]
    assert read_output("openclaw", "a", {"path": "x", "offset": True}).numbers == [1]


def test_a_format_without_a_rule_has_no_file_lines():
    assert read_output("fluux_xmpp", "     1\u2192x", None) is None
    assert read_output("no_such_format", "     1\u2192x", None) is None


def test_pi_numbers_a_read_as_openclaw_does_its_reader_being_the_same():
    arguments = {"path": "src/a.ts", "offset": 720, "limit": 50}
    assert read_output("pi", "one\ntwo", arguments) == read_output("openclaw", "one\ntwo", arguments)
    assert read_output("pi", "one\ntwo", arguments).numbers == [720, 721]
