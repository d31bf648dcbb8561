"""``python -m assay.drivers.fio --spec JSON``: the fio driver program (see the package docstring).

Exit codes: 0 ok; 1 fio failed (fio's stderr tail is printed), or ran out of time; 2 bad spec
or a safety refusal (nothing was written).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from pathlib import Path

from pydantic import ValidationError

from assay.drivers.fio import clients
from assay.drivers.fio.checks import Refused, check_spec
from assay.drivers.fio.modes import run_curves, run_workloads
from assay.drivers.fio.runner import (
    EXIT_FIO,
    EXIT_OK,
    EXIT_SPEC,
    Driver,
    OutOfTime,
    Terminated,
    engine_available,
    resolve_fio,
    say,
    sigterm_raises,
)
from assay.drivers.fio.spec import SCRATCH, DriverSpec
from assay.fio.hosts import ClientError
from assay.fio.safety import direct_fallback
from assay.fio.target import cleanup, prepare, read_marker, supports_o_direct


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m assay.drivers.fio")
    ap.add_argument("--spec", required=True, help="the driver spec, JSON")
    args = ap.parse_args(argv)
    started = time.monotonic()
    try:
        spec = DriverSpec.model_validate(json.loads(args.spec))
    except (json.JSONDecodeError, ValidationError) as exc:
        say(f"bad spec: {exc}")
        return EXIT_SPEC
    fio = resolve_fio(spec.fio)
    if fio is None:
        say(f"fio not found: {spec.fio!r} (Debian/Ubuntu: apt-get install fio; or set fio=PATH)")
        return EXIT_FIO
    cwd = Path.cwd()
    notes: dict[str, str] = {}
    if not engine_available(fio, spec.ioengine):
        if spec.ioengine != "libaio":
            say(f"bad spec: fio has no ioengine {spec.ioengine!r} (fio --enghelp lists them)")
            return EXIT_SPEC
        notes["ioengine_fallback"] = "libaio not available: psync (one I/O per thread)"
        say(notes["ioengine_fallback"])
        spec = spec.model_copy(update={"ioengine": "psync"})

    target = spec.target if spec.target is not None else str(cwd / SCRATCH)
    try:
        checked = check_spec(spec, target)
    except Refused as exc:
        for line in exc.lines:
            say(line)
        return EXIT_SPEC
    placement, items, hosts, created = (
        checked.placement,
        checked.items,
        checked.hosts,
        checked.created,
    )

    deadline = started + spec.deadline_s if spec.deadline_s else None
    driver = Driver(spec, fio, cwd, deadline, filename=placement.filename, notes=notes, hosts=hosts)
    try:
        prepare(placement)
    except OSError as exc:  # e.g. the target's parent directory does not exist
        say(f"refused: cannot create {placement.workdir}: {exc.strerror}")
        return EXIT_SPEC
    code = EXIT_OK
    try:
        with sigterm_raises(), contextlib.ExitStack() as servers:
            if hosts:
                # stopped when this block ends, however it ends (SIGTERM is an exception here)
                servers.enter_context(clients.servers(hosts, fio, cwd, fio_remote=spec.fio))
                say("fio servers listening: " + ", ".join(str(h) for h in hosts))
            driver.workdir = placement.workdir
            if placement.workdir:
                driver.filled = {
                    k: v
                    for k, v in read_marker(placement.workdir).items()
                    if v and (Path(placement.workdir) / k).is_file()
                }
                supported = supports_o_direct(placement.workdir)
                direct, warning = direct_fallback(supported, spec.direct, target)
                if warning:
                    say(warning)
                    driver.notes["direct_fallback"] = warning
                    items = [
                        dataclasses.replace(
                            i, jobs=tuple(dataclasses.replace(j, direct=direct) for j in i.jobs)
                        )
                        for i in items
                    ]
            if spec.mode == "curve":
                run_curves(driver, items)
            else:
                run_workloads(driver, items)
    except OutOfTime as exc:
        say(f"out of time: {exc}")
        code = EXIT_FIO
    except ClientError as exc:
        say(f"fio servers: {exc}")
        code = EXIT_FIO
    except Terminated:
        say("terminated: stopping fio and removing the test files")
        code = EXIT_FIO
    finally:
        if spec.keep:
            say(f"keep: test files left in {placement.workdir or placement.filename}")
        else:
            removed = cleanup(placement, created)
            say(f"removed {len(removed)} test file(s)/dir(s)")
    if driver.failures and code == EXIT_OK:
        code = EXIT_FIO
    return code


if __name__ == "__main__":
    sys.exit(main())
