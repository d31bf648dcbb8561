"""Reading a file the user names, bounded by a stated size.

``assay import /dev/zero`` (or a file symlinked to it) used to read until memory ran out. Every
read of an input file goes through ``read_bounded``, which reads at most ``limit`` bytes and
refuses a larger file by name, saying the bound: no tool output, suite or parameter file comes
near it, and nothing is read past it.
"""

from __future__ import annotations

import os

from assay.errors import AssayError

MiB = 2**20
# A tool's output to import: the largest real ones are fio JSON+ documents of many jobs and
# assay's own JSON report (about 640 B a sample: 256 MiB holds some 400,000 samples).
MAX_OUTPUT_BYTES = 256 * MiB
# What a user writes: a suite, a Vdbench parameter file, a hostfile, an HPL.dat, a reference set.
MAX_TEXT_BYTES = 4 * MiB


class InputTooLarge(AssayError):
    """A file over the size an input of its kind can have."""


def read_bounded(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them; a larger file (or a device that never
    ends, like /dev/zero) is an InputTooLarge naming it and the bound. OSError as ``open``."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InputTooLarge(
            f"{os.fspath(path)}: larger than {limit // MiB} MiB ({limit} bytes), more than "
            f"any {what}; not read further"
        )
    return data
