"""The analyzer does not depend on the study orchestrator (docs/studies.md, "Two packages"): `rtclab_study` imports
`rtclab`, and no module of `rtclab` names `rtclab_study` in its code except the console entry rtclab/cli.py, which
imports it inside a function (`rtclab study ...`). A scan of every module's syntax tree: imports, names, attributes
and string constants (a dynamic import, `-m rtclab_study` in a command); docstrings may explain the split."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ANALYSIS = Path(__file__).resolve().parents[1]
RTCLAB = ANALYSIS / "rtclab"
ORCHESTRATOR = "rtclab_study"
# Not the package: the key of study.parquet's schema metadata that holds the study's name (rtclab/study/aggregate.py),
# a field of a file format since studies began.
PARQUET_METADATA_KEY = ORCHESTRATOR


def _docstrings(nodes: list[ast.AST]) -> set[int]:
    ids = set()
    for n in nodes:
        if not isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        body = n.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            ids.add(id(body[0].value))
    return ids


def mentions(path: Path, root: Path = ANALYSIS) -> list[str]:
    """Where a module's code names the orchestrator: `path:line: what`."""
    nodes = list(ast.walk(ast.parse(path.read_text(), str(path))))  # walked once, read three times
    docs = _docstrings(nodes)
    dict_keys = {id(k) for n in nodes if isinstance(n, ast.Dict) for k in n.keys if k is not None}
    found = []
    for n in nodes:
        what = None
        if isinstance(n, ast.Import) and any(a.name.split(".")[0] == ORCHESTRATOR for a in n.names):
            what = "import"
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").split(".")[0] == ORCHESTRATOR:
            what = "from-import"
        elif isinstance(n, ast.Name) and n.id == ORCHESTRATOR:
            what = "name"
        elif isinstance(n, ast.Attribute) and n.attr == ORCHESTRATOR:
            what = "attribute"
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and ORCHESTRATOR in n.value and id(n) not in docs:
            if not (n.value == PARQUET_METADATA_KEY and id(n) in dict_keys):
                what = f"string {n.value[:60]!r}"
        if what:
            found.append(f"{path.relative_to(root)}:{getattr(n, 'lineno', '?')}: {what}")
    return found


def test_no_rtclab_module_but_cli_names_the_orchestrator() -> None:
    modules = sorted(p for p in RTCLAB.rglob("*.py") if p != RTCLAB / "cli.py")
    assert len(modules) > 30 and RTCLAB / "study" / "aggregate.py" in modules
    found = [m for p in modules for m in mentions(p)]
    assert found == [], "rtclab modules naming rtclab_study (only rtclab/cli.py may, lazily):\n" + "\n".join(found)


def test_the_scan_sees_what_it_must(tmp_path: Path) -> None:
    """The scan itself: each way of naming the package in code is caught; docstrings and the parquet key are not."""
    module = tmp_path / "m.py"
    module.write_text('"""Docs may say rtclab_study."""\n'
                      "import importlib\n"
                      "import rtclab_study\n"
                      "from rtclab_study.runner import x\n"
                      "rtclab_study.main()\n"
                      "importlib.import_module('rtclab_study.spec')\n"
                      "cmd = ['python', '-m', 'rtclab_study', 'run']\n"
                      "meta = {'rtclab_study': 'name'}\n"
                      "def f():\n"
                      "    '''rtclab_study in a docstring.'''\n")
    found = sorted(m.split(": ", 1)[1] for m in mentions(module, tmp_path))
    assert found == sorted(["import", "from-import", "name", "string 'rtclab_study.spec'", "string 'rtclab_study'"])


def test_cli_imports_the_orchestrator_only_inside_a_function() -> None:
    tree = ast.parse((RTCLAB / "cli.py").read_text())
    functions = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inside = {id(n) for f in functions for n in ast.walk(f)}
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or "").startswith(ORCHESTRATOR)]
    assert imports, "rtclab study ... no longer dispatches to rtclab_study"
    assert all(id(n) in inside for n in imports), "rtclab/cli.py imports rtclab_study at module level"


def test_importing_every_analyzer_module_does_not_load_the_orchestrator() -> None:
    code = ("import importlib, pkgutil, sys, rtclab\n"
            "names = [m.name for m in pkgutil.walk_packages(rtclab.__path__, 'rtclab.')]\n"
            "for n in names:\n"
            "    importlib.import_module(n)\n"
            "assert 'rtclab.study.aggregate' in names and 'rtclab.cli' in names, names\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rtclab_study'))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
