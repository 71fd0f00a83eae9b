#!/usr/bin/env python3
"""The size limits of docs/STYLE: no production source file over 600 lines, no function over
150 lines in services/ and sdk/ (C++ and Python here; the console's JavaScript through ESLint's
max-lines rules in scripts/check-js).

Usage: check_size.py [--max-file-lines N] [--max-function-lines N] FILE...
       check_size.py --self-test   (the function finder on made-up sources)
Prints one line per file or function over its limit ("path:line: ...") and exits 1 when there
is any, 0 when there is none.

C++ functions are found on the text as clang-format leaves it: comments, string and character
literals (raw strings too) and preprocessor lines are blanked, then every brace block whose
enclosing blocks are only namespaces, classes, structs, unions or extern blocks and whose
header has a parameter list is a function (or a constructor, operator, member defined in its
class); its length runs from its header's first line to its closing brace. Lambdas and local
classes count in the function that holds them.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from dataclasses import dataclass
from typing import Iterator, List

_SCOPE_KEYWORDS = re.compile(r"\b(namespace|class|struct|union|enum|extern)\b")
_ACCESS = re.compile(r"^[ \t]*(public|private|protected)[ \t]*:(?!:)", re.M)
_CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else|try)\b")


@dataclass
class Finding:
    path: str
    line: int
    text: str


def blank_cpp(src: str) -> str:
    """src with comments, literals and preprocessor lines turned into spaces (newlines kept)."""
    out: List[str] = []
    i, n = 0, len(src)
    at_line_start = True
    while i < n:
        c = src[i]
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":  # A preprocessor line, with its continuations.
            while i < n and src[i] != "\n":
                if src[i] == "\\" and i + 1 < n and src[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        at_line_start = False
        if c == "\n":
            out.append(c)
            at_line_start = True
            i += 1
        elif src.startswith("//", i):
            while i < n and src[i] != "\n":
                out.append(" ")
                i += 1
        elif src.startswith("/*", i):
            end = src.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", src[i:end]))
            i = end
        elif c == "R" and i + 1 < n and src[i + 1] == '"' and not _ident_before(src, i):
            m = re.match(r'R"([^(\s]{0,16})\(', src[i:])
            if m is None:
                out.append(c)
                i += 1
                continue
            close = ")" + m.group(1) + '"'
            end = src.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append(re.sub(r"[^\n]", " ", src[i:end]))
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and src[i - 1].isalnum():  # A digit separator: 1'000.
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _ident_before(src: str, i: int) -> bool:
    """Whether src[i] continues an identifier (so 'R' is not a raw string's prefix)."""
    if i == 0:
        return False
    p = src[i - 1]
    # u8R"(...)", LR"(...)" and friends are raw strings too.
    if p in "uUL8" and (i < 2 or not (src[i - 2].isalnum() or src[i - 2] == "_")):
        return False
    return p.isalnum() or p == "_"


def cpp_functions(src: str) -> Iterator[tuple[int, int, str]]:
    """(first line, last line, header) of each function in C++ source, 1-based."""
    text = blank_cpp(src)
    # Per open brace: whether it opens a scope that may hold functions.
    stack: List[tuple[bool, int, str]] = []  # (is_scope, start line, header)
    header_start = 0  # Offset where the current header (text since the last ; { }) begins.
    line_of = _line_index(text)
    for i, c in enumerate(text):
        if c == ";":
            header_start = i + 1
        elif c == "{":
            access = _ACCESS.search(text, header_start, i)
            if access:  # `public:` ends the header before it.
                header_start = access.end()
            header = text[header_start:i]
            in_scope = all(s[0] for s in stack)
            is_scope = bool(_SCOPE_KEYWORDS.search(header)) and "(" not in _before_keyword(header)
            first = _first_code_line(text, header_start, i, line_of)
            if in_scope and not is_scope and _looks_like_function(header):
                stack.append((False, first, " ".join(header.split())))
            else:
                stack.append((is_scope, first, ""))
            header_start = i + 1
        elif c == "}":
            if stack:
                is_scope, first, header = stack.pop()
                if header:
                    yield first, line_of(i), header
            header_start = i + 1


def _before_keyword(header: str) -> str:
    m = _SCOPE_KEYWORDS.search(header)
    return header[: m.start()] if m else header


def _looks_like_function(header: str) -> bool:
    """A parameter list, not a control statement, and no `=` before it (`auto f = [] {`,
    `T x = {`: an initializer or a lambda, not a function)."""
    h = header.strip()
    if not h or ")" not in h or _CONTROL.match(h):
        return False
    before_params = h.split("(", 1)[0]
    return "=" not in before_params or "operator" in before_params


def _first_code_line(text: str, start: int, end: int, line_of) -> int:
    j = start
    while j < end and text[j].isspace():
        j += 1
    return line_of(j)


def _line_index(text: str):
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_of(offset: int) -> int:
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    return line_of


def py_functions(src: str) -> Iterator[tuple[int, int, str]]:
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield first, node.end_lineno or node.lineno, node.name


def check(paths: List[str], max_file: int, max_function: int) -> List[Finding]:
    findings: List[Finding] = []
    for path in paths:
        if not os.path.isfile(path):
            continue  # Deleted in the working tree, still tracked.
        try:
            with open(path, encoding="utf-8") as f:
                src = f.read()
        except (OSError, UnicodeDecodeError) as e:
            findings.append(Finding(path, 1, f"cannot read: {e}"))
            continue
        lines = src.count("\n") + (0 if src.endswith("\n") or not src else 1)
        if lines > max_file:
            findings.append(Finding(path, 1, f"{lines} lines (at most {max_file})"))
        if not path.startswith(("services/", "sdk/")):
            continue
        if path.endswith((".cc", ".h")):
            functions = cpp_functions(src)
        elif path.endswith(".py"):
            functions = py_functions(src)
        else:
            continue
        for first, last, name in functions:
            length = last - first + 1
            if length > max_function:
                short = name if len(name) <= 80 else name[:77] + "..."
                findings.append(
                    Finding(
                        path, first, f"function of {length} lines (at most {max_function}): {short}"
                    )
                )
    return findings


def self_test() -> List[str]:
    """The finder on made-up sources: what it must find and what it must not. Problems found."""
    body = "\n".join("  x += %d;" % i for i in range(148))
    src = (
        "#include <x>\n#define M(a) { a }\nnamespace n {\n"
        "const char* kSql = R\"sql(SELECT '{' FROM t WHERE a = '}')sql\";\n"
        "int kTable[] = {1, 2};\n"
        "class C {\n public:\n  int Short() { return 1; }\n};\n"
        "int Long(int a) {\n  // a { in a comment\n" + body + "\n}\n"  # 151 lines
        "int Fits(int a) {\n" + body + "\n}\n"  # 150 lines
        "}  // namespace n\n"
    )
    found = {h.split("(")[0].split()[-1]: last - first + 1 for first, last, h in cpp_functions(src)}
    problems = []
    if found.get("Long") != 151:
        problems.append(f"Long: {found.get('Long')} lines found, 151 written")
    if found.get("Fits") != 150:
        problems.append(f"Fits: {found.get('Fits')} lines found, 150 written")
    if found.get("Short") != 1:
        problems.append(f"C::Short: {found.get('Short')} lines found, 1 written")
    py = "def f():\n" + "\n".join("    x = %d" % i for i in range(151)) + "\n"
    if [n for _, _, n in py_functions(py)] != ["f"]:
        problems.append("python: f not found")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-file-lines", type=int, default=600)
    parser.add_argument("--max-function-lines", type=int, default=150)
    parser.add_argument("--self-test", action="store_true", help="check the finder itself")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    if args.self_test:
        problems = self_test()
        for p in problems:
            print(f"check_size self-test: {p}")
        return 1 if problems else 0
    findings = check(args.files, args.max_file_lines, args.max_function_lines)
    for f in findings:
        print(f"{f.path}:{f.line}: {f.text}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
