"""The analyzer's two commands run inside the test's own process: the entry point the console command calls
(rtclab.cli.main for `python -m rtclab.cli`, rtclab_study.__main__.main for `python -m rtclab_study`), its stdout and
stderr captured, its exit status as the process would have had it (argparse's SystemExit included). A test that only
reads what a command printed and returned spares the interpreter's start and the analyzer's imports (about a second
of CPU each here); each command keeps tests that start it as a real process (its `python -m` entry, a traceback
escaping main), which these cannot see."""

from __future__ import annotations

import contextlib
import io
import subprocess
from typing import Callable


def _run(main: Callable[[list[str]], int], prog: str, args: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as e:  # argparse's usage errors and --help, as `sys.exit(main())` would end the process
            if isinstance(e.code, str):
                print(e.code, file=err)
            code = 1 if isinstance(e.code, str) else int(e.code or 0)
    return subprocess.CompletedProcess([prog, *args], code, out.getvalue(), err.getvalue())


def rtclab(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m rtclab.cli ARGS...`, in this process."""
    from rtclab import cli
    return _run(cli.main, "rtclab", args)


def rtclab_study(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m rtclab_study ARGS...`, in this process."""
    from rtclab_study.__main__ import main
    return _run(main, "rtclab_study", args)
