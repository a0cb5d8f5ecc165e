"""Count each module's guard lines: the lines that refuse bad input rather than compute.

A guard is an ``if`` whose body is only a ``raise`` (the whole ``if``: its condition and its
``raise``, every physical line of both), or any other ``raise`` statement (its lines). Lines
are physical source lines; a line counted twice is counted once. Docstrings and comments are
not code and are not counted in the total either.

    python tools/guard_lines.py [ROOT]     # a table: module, guard lines, code lines, share

Used to report how much of each teaching module is guard against equation (issue 24).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path


def _code_lines(source: str) -> set[int]:
    """Lines holding code: not blank, not only a comment, not inside a docstring."""
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                              tokenize.DEDENT, tokenize.ENDMARKER, tokenize.STRING):
            lines.update(range(token.start[0], token.end[0] + 1))
    tree = ast.parse(source)
    for node in ast.walk(tree):  # a string that is a statement of its own is a docstring
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            lines -= set(range(node.lineno, node.end_lineno + 1))
    return lines | _string_code_lines(tree)


def _string_code_lines(tree: ast.AST) -> set[int]:
    """Lines of strings that are part of a statement (an error message, an argument)."""
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)
                  and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant | ast.JoinedStr) and id(node) not in docstrings \
                and hasattr(node, "lineno"):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def guard_lines(source: str) -> set[int]:
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.If) and not node.orelse and len(node.body) == 1 \
                and isinstance(node.body[0], ast.Raise):
            lines.update(range(node.lineno, node.end_lineno + 1))
        elif isinstance(node, ast.Raise):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def table(root: Path) -> list[tuple[str, int, int]]:
    rows = []
    for path in sorted((root / "mlmlib").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        code = _code_lines(source)
        rows.append((path.relative_to(root).as_posix(), len(guard_lines(source) & code),
                     len(code)))
    return rows


def main(argv=None) -> int:
    root = Path((argv or sys.argv[1:] or ["."])[0])
    rows = table(root)
    print(f"{'module':40s} {'guard':>6s} {'code':>6s} {'share':>6s}")
    for name, guard, code in rows:
        print(f"{name:40s} {guard:6d} {code:6d} {guard / max(code, 1):6.0%}")
    guard, code = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{'all of mlmlib':40s} {guard:6d} {code:6d} {guard / max(code, 1):6.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
