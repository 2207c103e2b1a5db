"""Regenerate every generated_examples/*/generated.py. Run as `python -m tests.update_goldens`,
then read the diff (`git diff generated_examples`) before committing it: CI never does this."""

from __future__ import annotations

import sys

from tests.cases import all_cases, generate_case


def main(names: list[str]) -> int:
    for case in all_cases(heterogeneous=True):
        if names and case.name not in names:
            continue
        source = generate_case(case).source
        old = case.golden.read_text() if case.golden.exists() else None
        case.golden.write_text(source)
        print(f"{case.name}: {'unchanged' if old == source else 'updated'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
