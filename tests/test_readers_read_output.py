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


def test_a_pi_read_keeps_the_notes_pi_writes_since_late_2025():
    # packages/coding-agent/src/core/tools/read.ts: a read cut by lines, by bytes, or by its limit.
    for note in (
        "[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]",
        "[Showing lines 1-1200 of 5000 (50KB limit). Use offset=1201 to continue.]",
        "[3 more lines in file. Use offset=3 to continue.]",
    ):
        found = read_output("pi", f"const a = 1;\nconst b = 2;\n\n{note}", {"path": "a.ts"})
        assert found.lines == ["const a = 1;", "const b = 2;"] and found.note == note


def test_a_pi_read_of_a_first_line_too_long_gives_no_line():
    text = "[Line 1 is 80.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' min.js | head -c 51200]"
    assert read_output("pi", text, {"path": "min.js"}) == FileLines([], [], text)


def test_a_gemini_cli_read_file_is_the_files_lines_from_line_1():
    found = read_output("gemini_cli", "def f():\n    return 1\n", {"file_path": "/w/f.py"})
    assert found == FileLines([1, 2], ["def f():", "    return 1"])


def test_a_gemini_cli_read_file_is_numbered_from_start_line_or_an_old_offset_counted_from_0():
    assert read_output("gemini_cli", "a\nb", {"file_path": "f", "start_line": 10}).numbers == [10, 11]
    assert read_output("gemini_cli", "a\nb", {"absolute_path": "f", "offset": 10, "limit": 2}).numbers == [
        11,
        12,
    ]


def test_a_gemini_cli_read_file_it_cut_says_so_in_the_note_and_starts_where_it_says():
    text = (
        "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 41-42 of 90 total lines.\n"
        "Action: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a "
        "subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 43.\n"
        "\n--- FILE CONTENT (truncated) ---\nforty-one\nforty-two"
    )
    found = read_output("gemini_cli", text, {"file_path": "f", "start_line": 41, "end_line": 42})
    assert found.numbers == [41, 42] and found.lines == ["forty-one", "forty-two"]
    assert found.note.startswith("Status: Showing lines 41-42 of 90 total lines.")


def test_a_gemini_cli_read_file_keeps_shortened_lines_and_appended_context_out_of_a_whole_file():
    shortened = read_output("gemini_cli", "x = '" + "a" * 20 + "... [truncated]\ny = 2\n", {"file_path": "f"})
    assert shortened.note == "Some lines were shortened."
    context = "a\n\n\n--- Newly Discovered Project Context ---\nUse tabs.\n--- End Project Context ---"
    found = read_output("gemini_cli", context, {"file_path": "f"})
    assert found.lines == ["a"] and found.note.startswith("--- Newly Discovered Project Context ---")
