"""The user's line as a generated module's message quotes it (render/quoted_lines.py): by its
code, not by the path and line number of a model file the shipped module does not contain."""

from __future__ import annotations

from gnn_codegen.ir import Assumption, StaticDecision
from gnn_codegen.render.assumptions import decision_notes, entry_checks
from gnn_codegen.render.quoted_lines import in_quotes, line_said, quoted


def test_the_code_is_said_where_the_location_has_it_even_with_colons_of_its_own() -> None:
    assert line_said("/home/me/model.py:28 (`h = x[:, 0]`)") == "`h = x[:, 0]`"
    assert line_said("/home/me/model.py:28", "if x.size(1) != 16:") == "`if x.size(1) != 16:`"


def test_without_code_a_place_in_words_is_kept_and_a_bare_file_line_is_forward() -> None:
    assert line_said("APPNPConv's norm reshape") == "APPNPConv's norm reshape"
    assert line_said("/home/me/model.py:28") == "forward"
    assert line_said("") == "forward"


def test_quotes_and_backslashes_are_escaped() -> None:
    assert quoted('g.edata["etype"] \\ 2') == '"g.edata[\\"etype\\"] \\\\ 2"'
    assert eval(quoted('a "b" \\c')) == 'a "b" \\c'
    assert in_quotes('"') == '\\"'


def _decision(where: str, source: str) -> StaticDecision:
    return StaticDecision(source, where, True, (Assumption("x", "shape", (16,)),))


def test_an_entry_check_quotes_the_line_and_no_file() -> None:
    lines = "\n".join(entry_checks((_decision("/home/me/model.py:9", "if x[:, 0].shape[-1] == 16:"),), {"x": "x"}))
    assert "as forward decides at `if x[:, 0].shape[-1] == 16:`" in lines
    assert "model.py" not in lines


def test_the_tools_notes_keep_the_file_and_line_and_a_colon_in_the_code() -> None:
    [note] = decision_notes((_decision("/home/me/model.py:9 (`h = x[:, 0]`)", "h.shape[-1] == 16"),))
    assert "at model.py:9 (`h = x[:, 0]`)" in note
