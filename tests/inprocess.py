"""``assay ARGS`` inside the test process, answering what ``subprocess.run`` would: the exit
status, stdout and stderr as text (newlines translated as text mode does), and an unexpected
exception as the interpreter prints it (a traceback on stderr, status 1), so a test asserting
"no traceback" can still fail.

What a fresh process would not share with earlier calls is reset or checked: the environment
is the caller's plus the given variables, then restored; the notes said once per command are
forgotten; and the consoles, made when ``assay.cli.common`` was first imported, must have no
colour and the width COLUMNS asks for, and the caller must be the main thread (stdout and the
environment are the process's), else ``run`` answers None and the caller starts a process.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import traceback
import types
import warnings
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def _environ(env: dict[str, str]):
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def _streams():
    """stdout and stderr as a child's pipes would be: not terminals, UTF-8, with a buffer."""
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv, sys.modules["__main__"]
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True) for _ in "12")
    # 'python -m assay' in usage lines, as click derives it from __main__ and argv[0]
    main = types.ModuleType("__main__")
    main.__package__ = "assay"
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
    sys.stdout, sys.stderr = out, err
    sys.modules["__main__"] = main
    try:
        yield out, err
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv, sys.modules["__main__"] = saved


@contextmanager
def _warnings(err: io.TextIOWrapper):
    """Warnings printed on stderr under a fresh interpreter's filters, not kept by pytest: a
    test that wants a clean stderr sees them as it would from a child."""
    with warnings.catch_warnings():
        warnings.resetwarnings()  # and, as the registries see filters change, "once" anew
        for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning,
                         DeprecationWarning):  # fmt: skip
            warnings.simplefilter("ignore", category)
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: (
            err.write(warnings.formatwarning(message, category, filename, lineno, line))
        )
        yield


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer.getvalue().decode("utf-8")
    return raw.replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as text=True


def _consoles_fresh(width: int) -> bool:
    from assay.cli import common

    return all(c.color_system is None and c.width == width for c in (common.console, common.out))


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess | None:
    if threading.current_thread() is not threading.main_thread():
        return None
    import assay.cli
    from assay.cli import common

    with _environ(env), _streams() as (out, err), _warnings(err):
        if not _consoles_fresh(int(env["COLUMNS"])):
            return None
        sys.argv = [str(Path(assay.cli.__file__).parent.parent / "__main__.py"), *args]
        common._SAID.clear()  # notes said once per command: a new command
        code: int | str | None = 0
        try:
            assay.cli.main()
        except SystemExit as exc:
            code = exc.code
        except KeyboardInterrupt:
            raise
        except BaseException:  # as the interpreter: the traceback on stderr, status 1
            traceback.print_exc(file=err)
            code = 1
        if isinstance(code, str):  # sys.exit("message"): printed, status 1
            print(code, file=err)
            code = 1
        sys.stdout.flush()
        return subprocess.CompletedProcess(
            ["assay", *args], code or 0, stdout=_text(out), stderr=_text(err)
        )
