"""The analyzer's commands run inside the test's own process: the entry point each command calls (rtclab.cli.main for
`python -m rtclab.cli`, rtclab_study.__main__.main for `python -m rtclab_study`, rtclab.export.main for `python -m
rtclab.export`) with its stdin given, its stdout and stderr captured and its exit status as the process would have
had it (argparse's SystemExit included). A test that only reads what a command printed and returned is spared an
interpreter's start, the analyzer's imports (half a second of CPU here) and their first use (schemas compiled,
plotly loaded); each command keeps tests that start it as a process of its own (its `python -m` entry, what a user
sees when main raises), which these cannot see."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from typing import Callable, Iterator


def _run(main: Callable[[list[str]], int], prog: str, args: tuple[str, ...],
         stdin: str = "") -> subprocess.CompletedProcess[str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _stdin(stdin):
        try:
            code = main(list(args))
        except SystemExit as e:  # argparse's usage errors and --help, as `sys.exit(main())` would end the process
            if isinstance(e.code, str):
                print(e.code, file=err)
            code = 1 if isinstance(e.code, str) else int(e.code or 0)
    return subprocess.CompletedProcess([prog, *args], code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _stdin(text: str) -> Iterator[None]:
    saved, sys.stdin = sys.stdin, io.StringIO(text)
    try:
        yield
    finally:
        sys.stdin = saved


def rtclab(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m rtclab.cli ARGS...`, in this process."""
    from rtclab import cli
    return _run(cli.main, "rtclab", args)


def rtclab_study(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m rtclab_study ARGS...`, in this process."""
    from rtclab_study.__main__ import main
    return _run(main, "rtclab_study", args)


def rtclab_export(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`python -m rtclab.export ARGS... < STDIN`, in this process."""
    from rtclab import export
    return _run(export.main, "rtclab.export", args, stdin)
