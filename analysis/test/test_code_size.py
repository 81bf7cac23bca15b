"""Rooms small enough to live in: no file of the repository's own code over 600 lines, no function over 80.

The code is that of analysis/, harness/, client/, signaling/, netem/, scripts/ and bench/: Python, JavaScript
(.js, .mjs, .cjs, .ts), Rust and shell, as git lists it. A file's size is its line count (as `wc -l` counts, plus a
last line without a newline). A function's size runs from its first line (the `def`/`fn`/`function` line, or a
decorator's) to its last, both counted.

How functions are found:
- Python: by `ast`, every `def` and `async def` (methods and nested functions too; a nested function's lines count
  in its outer function as well).
- JavaScript and Rust: by a simple brace-matching scanner, not a parser. It blanks comments, strings, template
  literals (their `${...}` stays code), Rust's raw strings and char literals and JavaScript's regex literals (a `/`
  where an operand cannot end), then takes as a function every `fn NAME`, `function NAME`, `=> {` and method head
  `NAME(...) {` and measures from that line to the line of the brace that closes its body. What it can misread (a
  regex literal after `)`, say) would show as a function of an odd length, named with its line, in the failure.
- Shell: files only (its functions are short by the scripts' own style, and a shell parser is out of scope here).

Allowed beyond the limits: vendored and generated files only (VENDORED).
"""

from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
CODE_DIRS = ("analysis", "harness", "client", "signaling", "netem", "scripts", "bench")
PYTHON = (".py",)
JAVASCRIPT = (".js", ".mjs", ".cjs", ".ts")
RUST = (".rs",)
SHELL = (".sh",)

# Vendored or generated: not ours to split.
VENDORED = {
    "analysis/rtclab/vendor/plotly-gl2d.min.js",  # plotly's own build (analysis/rtclab/vendor/README.md)
}


@dataclass(frozen=True)
class Function:
    name: str
    first_line: int
    last_line: int

    @property
    def lines(self) -> int:
        return self.last_line - self.first_line + 1


def own_code_files() -> list[str]:
    """The repository's own code files (paths relative to the root), as git lists them."""
    out = subprocess.run(
        ["git", "ls-files", "--", *CODE_DIRS], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout
    return sorted(p for p in out.splitlines() if p.endswith(PYTHON + JAVASCRIPT + RUST + SHELL))


def line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _statements(body: list[ast.stmt]) -> list[ast.AST]:
    """Every statement in a body and in the bodies nested in it (if, for, with, try, match, def, class), without
    descending into expressions: a def is a statement, so no function is missed, in a fraction of ast.walk's time."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        out.append(node)
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(node, name, None) or [])
    return out


def python_functions(text: str) -> list[Function]:
    functions = []
    for node in _statements(ast.parse(text).body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            functions.append(Function(node.name, first, node.end_lineno or node.lineno))
    return functions


# Characters after which a `/` starts a regex literal in JavaScript (an operand cannot end there).
_REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^") | {""}
_REGEX_AFTER_WORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "yield"}


_RAW_STRING = re.compile(r'r(#*)"')
# The characters where a comment, a literal or a brace of code can start, for JavaScript (False) and Rust (True).
_LITERAL_OR_BRACE = {False: re.compile(r"[/\"'`{}]"), True: re.compile(r"[/\"'r{}]")}
_CHAR_LITERAL = re.compile(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'")


class _Blanker:
    """One pass over a file's text (see blank_literals), one method per kind of literal; each takes the position of
    the literal's first character and returns the position after it."""

    def __init__(self, text: str, rust: bool) -> None:
        self.text, self.rust, self.n = text, rust, len(text)
        self.out = list(text)
        self.depth = 0  # of braces in code
        # The template literals whose `${` we are inside (JavaScript), each by the brace depth at its `${`: at the
        # `}` that closes it, the template resumes.
        self.template_depths: list[int] = []

    def run(self) -> str:
        text, rust, i = self.text, self.rust, 0
        starts = _LITERAL_OR_BRACE[rust]
        while i < self.n:
            # Code between these characters needs nothing done: skip to the next one (a third of the test's time
            # was this loop stepping over plain code one character at a time).
            m = starts.search(text, i)
            if m is None:
                break
            i = m.start()
            c, nxt = text[i], text[i + 1 : i + 2]
            if c == "/" and nxt in ("/", "*"):
                i = self.comment(i)
            elif rust and c == "r" and _RAW_STRING.match(text, i) and not (i and _word_char(text[i - 1])):
                i = self.raw_string(i)
            elif c == '"' or (c == "'" and not rust):
                i = self.string(i)
            elif c == "'":
                i = self.char_literal(i)
            elif c == "`" and not rust:
                i = self.template(i + 1)
            elif c == "/" and not rust and self.last_significant(i) in _REGEX_AFTER | _REGEX_AFTER_WORDS:
                i = self.regex(i)
            else:
                i = self.code(i)
        return "".join(self.out)

    def blank(self, a: int, b: int) -> None:
        for k in range(a, min(b, self.n)):
            if self.out[k] != "\n":
                self.out[k] = " "

    def comment(self, i: int) -> int:
        line = self.text[i + 1] == "/"
        e = self.text.find("\n" if line else "*/", i + 2)
        e = self.n if e < 0 else e + (0 if line else 2)
        self.blank(i, e)
        return e

    def raw_string(self, i: int) -> int:
        raw = _RAW_STRING.match(self.text, i)
        assert raw is not None
        close = '"' + raw.group(1)
        e = self.text.find(close, raw.end())
        e = self.n if e < 0 else e + len(close)
        self.blank(i + 1, e - 1)
        return e

    def string(self, i: int) -> int:
        quote, k = self.text[i], i + 1
        while k < self.n and self.text[k] != quote and self.text[k] != "\n":
            k += 2 if self.text[k] == "\\" else 1
        self.blank(i + 1, k)
        return k + 1

    def char_literal(self, i: int) -> int:
        # Rust: a char literal ('x', '\n', '\u{..}') or a lifetime ('a): only the former is blanked.
        m = _CHAR_LITERAL.match(self.text, i)
        if not m:
            return i + 1
        self.blank(i + 1, m.end() - 1)
        return m.end()

    def template(self, k: int) -> int:
        """From inside a template literal at k: the position after its closing backtick, or after the `${` that
        opens code (pushed on the stack)."""
        start = k
        while k < self.n:
            c = self.text[k]
            if c == "\\":
                k += 2
            elif c == "`":
                self.blank(start, k)
                return k + 1
            elif c == "$" and self.text[k + 1 : k + 2] == "{":
                self.blank(start, k)
                self.template_depths.append(self.depth)
                self.depth += 1
                return k + 2
            else:
                k += 1
        self.blank(start, self.n)
        return self.n

    def regex(self, i: int) -> int:
        k, in_class = i + 1, False
        while k < self.n and self.text[k] != "\n":
            c = self.text[k]
            if c == "\\":
                k += 1
            elif c == "[":
                in_class = True
            elif c == "]":
                in_class = False
            elif c == "/" and not in_class:
                break
            k += 1
        self.blank(i + 1, k)
        return k + 1

    def code(self, i: int) -> int:
        c = self.text[i]
        if c == "{":
            self.depth += 1
        elif c == "}":
            self.depth -= 1
            if self.template_depths and self.template_depths[-1] == self.depth:
                self.template_depths.pop()
                return self.template(i + 1)
        return i + 1

    def last_significant(self, k: int) -> str:
        """The code before position k, back to the last non-blank character: that character, or the word it ends."""
        out, j = self.out, k - 1
        while j >= 0 and out[j] in " \t\r\n":
            j -= 1
        if j < 0:
            return ""
        if out[j].isalnum() or out[j] in "_$":
            e = j + 1
            while j >= 0 and (out[j].isalnum() or out[j] in "_$"):
                j -= 1
            return "".join(out[j + 1 : e])
        return out[j]


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def blank_literals(text: str, rust: bool) -> str:
    """The text with comments and the insides of literals replaced by spaces (newlines kept), so that only code's
    braces and parentheses remain, each at its own line and column."""
    return _Blanker(text, rust).run()


_RUST_HEAD = re.compile(r"\bfn\s+(\w+)")
_JS_HEADS = (
    re.compile(r"\bfunction\b\s*\*?\s*(\w*)\s*\("),
    # A method head: a name and its parameters, then its body's brace before any `;` (a call is not followed by one).
    re.compile(r"(?:^|[^\w$.])(?:async\s+|static\s+|get\s+|set\s+|\*\s*)*([A-Za-z_$][\w$]*)\s*\((?=[^;]*?\)\s*\{)",
               re.M),
    re.compile(r"=>\s*(?=\{)"),
)
_NOT_METHODS = {"if", "for", "while", "switch", "catch", "function", "return", "with", "typeof", "await", "new"}


def brace_functions(text: str, rust: bool) -> list[Function]:
    """Functions found by their heads and measured to the brace that closes their body (see the module's
    docstring)."""
    code = blank_literals(text, rust)
    line_starts = [0] + [m.end() for m in re.finditer("\n", code)]

    def line_of(pos: int) -> int:
        lo, hi = 0, len(line_starts)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid
        return lo + 1

    heads: dict[int, tuple[str, int]] = {}  # position of the body's opening brace -> (function name, head position)
    if rust:
        matches = [(m, m.group(1)) for m in _RUST_HEAD.finditer(code)]
    else:
        matches = []
        for pattern in _JS_HEADS:
            for m in pattern.finditer(code):
                name = m.group(1) if pattern.groups else arrow_name(code, m.start())
                if name in _NOT_METHODS:
                    continue
                matches.append((m, name or "(anonymous)"))
    for m, name in matches:
        body = body_brace(code, m.end() if not rust else m.end(), rust)
        if body is not None and body not in heads:
            heads[body] = (name, m.start(1) if pattern_has_name(m) else m.start())
    functions = []
    for open_pos, (name, head_pos) in heads.items():
        close_pos = matching_brace(code, open_pos)
        if close_pos is not None:
            functions.append(Function(name, line_of(head_pos), line_of(close_pos)))
    return functions


def pattern_has_name(m: re.Match[str]) -> bool:
    """Whether the head's match names its function (its group 1), which starts the head; else the match does."""
    return bool(m.re.groups) and m.start(1) >= 0


def arrow_name(code: str, pos: int) -> str:
    """An arrow function's name from its line: the variable it is assigned to, or the call it is passed to (a test's
    callback: `test(...) callback`)."""
    line = code[code.rfind("\n", 0, pos) + 1 : pos]
    if m := re.search(r"\b(?:const|let|var)\s+([\w$]+)\s*=", line):
        return m.group(1)
    if m := re.match(r"\s*(?:await\s+)?([\w$.]+)\(", line):
        return f"{m.group(1)}(...) callback"
    return "(arrow)"


def body_brace(code: str, pos: int, rust: bool) -> int | None:
    """The position of a function body's opening brace, from just after its head: past its balanced parameter list
    (whose default values or patterns may hold braces), then the first `{`; None for a declaration without a body
    (a trait's `fn f();`)."""
    k = pos
    n = len(code)
    # Back up to the parameter list's "(" when the head's match ended just past it.
    if k > 0 and code[k - 1] == "(":
        k -= 1
    while k < n and code[k] in " \t\r\n":
        k += 1
    if k < n and code[k] == "(":
        level = 0
        while k < n:
            if code[k] == "(":
                level += 1
            elif code[k] == ")":
                level -= 1
                if level == 0:
                    k += 1
                    break
            k += 1
    elif rust:
        # Generic parameters before the parameter list: `fn f<T: Fn() -> U>(`.
        p = code.find("(", k)
        if p < 0:
            return None
        return body_brace(code, p, rust)
    while k < n:
        if code[k] == "{":
            return k
        if code[k] == ";" or (not rust and code[k] in ",)"):
            return None
        k += 1
    return None


def matching_brace(code: str, open_pos: int) -> int | None:
    level = 0
    for k in range(open_pos, len(code)):
        if code[k] == "{":
            level += 1
        elif code[k] == "}":
            level -= 1
            if level == 0:
                return k
    return None


def functions_of(path: str, text: str) -> list[Function]:
    if path.endswith(PYTHON):
        return python_functions(text)
    if path.endswith(JAVASCRIPT):
        return brace_functions(text, rust=False)
    if path.endswith(RUST):
        return brace_functions(text, rust=True)
    return []


def oversized(paths: list[str]) -> list[str]:
    """Each file over MAX_FILE_LINES and each function over MAX_FUNCTION_LINES, outside the allow-lists."""
    problems = []
    for path in paths:
        if path in VENDORED:
            continue
        text = (REPO / path).read_text(encoding="utf-8")
        lines = line_count(text)
        if lines > MAX_FILE_LINES:
            problems.append(f"{path}: {lines} lines (over {MAX_FILE_LINES})")
        for f in functions_of(path, text):
            if f.lines > MAX_FUNCTION_LINES:
                problems.append(
                    f"{path}:{f.first_line}: function {f.name} is {f.lines} lines (over {MAX_FUNCTION_LINES})"
                )
    return problems


def test_no_file_of_our_code_is_over_600_lines_nor_any_function_over_80():
    files = own_code_files()
    assert len(files) > 100, f"git listed only {len(files)} code files under {CODE_DIRS}"
    problems = oversized(files)
    assert not problems, "too big to live in; split where the steps are:\n" + "\n".join(problems)


def test_the_allow_list_names_files_that_exist():
    files = set(own_code_files())
    missing = sorted(VENDORED - files)
    assert not missing, f"allow-listed but not in the repository (remove them from the list): {missing}"


# The measures themselves, against functions whose lengths are known by construction.


def _python_function(name: str, body_lines: int) -> str:
    return f"def {name}():\n" + "".join(f"    x{k} = {k}\n" for k in range(body_lines))


def test_python_functions_are_measured_from_decorator_to_last_line():
    text = "import functools\n\n@functools.cache\n" + _python_function("f", 81)
    text += "\n\nclass C:\n    def m(self):\n        return 1\n"
    by_name = {f.name: f for f in python_functions(text)}
    assert (by_name["f"].first_line, by_name["f"].lines) == (3, 83)
    assert by_name["m"].lines == 2


JS_SAMPLE = """\
// function commented(a) { not code }
const re = /[{]\\}/g;
function plain(a, { b = {} } = {}) {
  const s = "}}}"; const t = '{';
  const u = `x ${ {a: 1}.a } } ${`nested ${b}`} {`;
  if (a) { return re.test(s); }
  return t + u;
}
class K {
  static async method(x) {
    return x.map((y) => {
      return y / 2;
    });
  }
}
export const arrow = async (a) => {
  /* { */
  return a;
};
"""


def test_the_brace_scanner_measures_javascript_functions_whatever_their_literals_hold():
    found = {(f.name, f.first_line, f.last_line) for f in brace_functions(JS_SAMPLE, rust=False)}
    assert ("plain", 3, 8) in found
    assert ("method", 10, 14) in found
    assert ("(arrow)", 11, 13) in found
    assert ("arrow", 16, 19) in found
    assert not any(name in {"commented", "if", "test"} for name, _, _ in found), found


RUST_SAMPLE = """\
/// fn documented() { }
pub trait T {
    fn declared(&self) -> u32;
}
impl<'a> S<'a> {
    pub fn generic<F: Fn() -> u32>(&'a self, f: F) -> Result<u32, String> {
        let open = '{';
        let raw = r#"}}"#;
        let s = "}";
        if f() > 0 { Ok(1) } else { Err(format!("{open}{raw}{s}")) }
    }
}
fn free() {}
"""


def test_the_brace_scanner_measures_rust_functions_whatever_their_literals_hold():
    found = {(f.name, f.first_line, f.last_line) for f in brace_functions(RUST_SAMPLE, rust=True)}
    assert found == {("generic", 6, 11), ("free", 13, 13)}


@pytest.mark.parametrize("lines", [80, 81])
def test_a_function_is_over_the_limit_from_81_lines(tmp_path, lines):
    # The limit in the check itself: 80 lines pass, 81 fail (a body of lines - 1 after the head).
    text = _python_function("f", lines - 1)
    (f,) = python_functions(text)
    assert f.lines == lines
    assert (f.lines > MAX_FUNCTION_LINES) == (lines == 81)
