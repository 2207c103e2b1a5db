"""The lines a reviewer must read in a generated module (issue 37's metric): those above its
first gnn-codegen banner (the convolution helpers' or the runtime's: what is below one is
library code, hashed) that are not blank, not imports, not the header's regenerate command,
and not copied from the user's model.py (black-formatted, as the module holds it).
`python -m tests.reviewer_lines` prints every example's count, largest first."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import black

BANNER = re.compile(r"^# --- gnn-codegen ", re.MULTILINE)
_IMPORT = re.compile(r"(import |from \S+ import )")


def reviewed(source: str) -> str:
    """The part of a generated module above its first banner."""
    match = BANNER.search(source)
    return source if match is None else source[: match.start()]


def reviewer_lines(folder: Path) -> int:
    """The lines of folder/generated.py a reviewer reads that are not folder/model.py's."""
    above = reviewed((folder / "generated.py").read_text()).split("\n")
    model = black.format_str((folder / "model.py").read_text(), mode=black.Mode()).split("\n")
    matcher = difflib.SequenceMatcher(None, above, model, autojunk=False)
    copied = {i for a, _, n in matcher.get_matching_blocks() for i in range(a, a + n)}
    return sum(1 for i, line in enumerate(above)
               if line.strip() and i not in copied and not _IMPORT.match(line) and not line.startswith("#   gnn-codegen"))


def main() -> None:
    from tests.cases import all_cases

    counts = {case.name: reviewer_lines(case.folder) for case in all_cases(heterogeneous=True)}
    for name, count in sorted(counts.items(), key=lambda item: -item[1]):
        print(f"{name:24s} {count:4d}")


if __name__ == "__main__":
    main()
