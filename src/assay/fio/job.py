"""A fio job, as data, and its job file text.

One ``FioJob`` is one ``[section]`` of a fio job file. Only options assay sets are modelled;
``extra`` carries any other fio option verbatim (name -> value) so nothing is dropped.
Sizes are bytes (ints) and rendered in fio's own syntax; fio reads a bare number as bytes.

Every name and value written into a job file is checked first (``check_text``): fio reads a job
file line by line, and any line can be an option -- ``exec_prerun=CMD`` runs a command -- or a
new ``[section]``. A value holding a newline (``target="/tmp/x\nexec_prerun=touch /tmp/pwned"``)
would smuggle such a line in, so a control character in a value, an option name that is not a
plain word (``rw=read\nexec_prerun``) or a section name with brackets is refused with a
``ValueError`` naming it; nothing is quoted, because fio's job file syntax has no quoting.

fio also reads a value differently from how it is written (fio 3.33, parse.c and options.c),
and a path assay checked must be the path fio opens (issue 21: ``filename=A:B`` wrote B, which
the safety check never looked at):

* ``;`` and ``#`` start a comment anywhere in a line, and blanks at either end are stripped
  (``strip_blank_end``): a value holding those, or starting or ending with a blank, is refused;
* ``${VAR}`` is replaced by the environment variable, and ``$pagesize``, ``$mb_memory`` and
  ``$ncpus`` by their values (``fio_option_dup_subs``, ``fio_keyword_replace``): refused in the
  options that name files (``FILE_OPTIONS``);
* an option naming any other path (``write_bw_log``, ``write_iolog``...: ``PATH_OPTIONS``) or a
  program (``exec_prerun``, the ``exec`` and ``external:`` engines) is refused anywhere: the
  safety rules never see where it writes, and assay never needs one (issue 28);
* ``filename`` and ``directory`` hold several names separated by ``:``; ``\\:`` is a colon of
  the name (``get_next_str``). ``fio_names`` splits a value as fio does; ``fio_path`` writes
  one path so that fio opens exactly it (every ``:`` escaped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# fio option names are words (fio HOWTO, "Job file parameters"): letters, digits, underscores
_OPTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# ASCII control characters (newline, carriage return, NUL...): each could end a job file line
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def control_problem(value: str, what: str) -> str | None:
    """Why ``value`` cannot go into a fio job file line, or None."""
    m = _CONTROL.search(value)
    if m is None:
        return None
    return (
        f"{what} {value!r} contains the control character {m.group()!r}: in a fio job file it "
        "would start a new line, which fio reads as an option of its own (exec_prerun= runs a "
        "command); refused"
    )


# Options whose value names files fio opens or creates: checked for fio's substitutions too.
FILE_OPTIONS = frozenset({"filename", "directory", "filename_format", "opendir"})
# Every other fio 3.33 option (``fio --cmdhelp=all``, ``--enghelp=ENGINE``) whose value names a
# path fio writes, reads or creates (issue 28): the safety rules never look at them, so assay
# never writes one into a job file. Logs (``write_bw_log=/etc/x`` writes /etc/x_bw.1.log), I/O
# logs and their replay target, blktrace merges, a cgroup directory, engines' files.
PATH_OPTIONS = frozenset({
    "write_iolog", "read_iolog", "replay_redirect", "merge_blktrace_file",
    "write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log",
    "cgroup", "conf", "hdfsdirectory", "nfs_url", "uri", "libblkio_path", "spdk_conf",
})  # fmt: skip
# Options that run a program: never written by assay, whoever asks.
COMMAND_OPTIONS = frozenset({"exec_prerun", "exec_postrun", "program", "arguments"})
# Engines that run or load code of the job file's choosing: ``exec`` runs ``program``,
# ``external:PATH`` loads a shared library.
COMMAND_ENGINES = ("exec", "external")
# fio's substitutions (options.c): ${VAR} and its reserved keywords
_SUBSTITUTED = re.compile(r"\$\{|\$pagesize|\$mb_memory|\$ncpus")


def misread_problem(key: str, value: str) -> str | None:
    """Why fio would read ``key=value`` as something else than ``value``, or None."""
    if ";" in value or "#" in value:
        mark = ";" if ";" in value else "#"
        return (
            f"fio option {key}={value!r}: fio reads {mark!r} as the start of a comment and "
            "would cut the value there; refused"
        )
    if value != value.strip():
        return f"fio option {key}={value!r}: fio strips blanks at either end; refused"
    if key in FILE_OPTIONS and (m := _SUBSTITUTED.search(value)):
        return (
            f"fio option {key}={value!r}: fio replaces {m.group()!r}... with a value of its "
            "own, so the file it opens is not the one named; refused"
        )
    return None


def unchecked_problem(key: str, value: str) -> str | None:
    """Why ``key=value`` would make fio write where the safety rules never look, or run a
    program (issue 28), or None."""
    if key in PATH_OPTIONS:
        return (
            f"fio option {key}={value!r} names a path fio writes or reads, which the safety "
            "rules do not check; refused"
        )
    if key in COMMAND_OPTIONS:
        return f"fio option {key}={value!r} runs a program; refused"
    if key == "ioengine" and value.strip().split(":", 1)[0].strip() in COMMAND_ENGINES:
        return f"fio option ioengine={value!r} runs or loads a program; refused"
    return None


def fio_names(value: str) -> list[str]:
    """The names fio reads in a ``filename`` or ``directory`` value: blanks at either end
    stripped, then split at each ``:`` that is not escaped as ``\\:`` (the backslash is
    dropped), empty names skipped (options.c, ``str_filename_cb`` and ``get_next_str``)."""
    names: list[str] = []
    current: list[str] = []
    text = value.strip()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and text[i + 1 : i + 2] == ":":
            current.append(":")
            i += 2
            continue
        if c == ":":
            if current:
                names.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    if current:
        names.append("".join(current))
    return names


def fio_path(path: str) -> str:
    """``path`` written as a ``filename`` or ``directory`` value that fio reads as exactly this
    one path (``fio_names(fio_path(p)) == [p]``): each ``:`` escaped. What no escape can carry
    (a comment mark, blanks at either end, a substitution) is refused when the job file is
    written (``check_text``)."""
    return path.replace(":", "\\:")


def check_text(section: str, options: list[tuple[str, str | None]]) -> None:
    """Refuse (ValueError) a section name or an option that could smuggle a line into a job
    file (see the module docstring)."""
    problem = control_problem(section, "fio job name")
    if problem:
        raise ValueError(problem)
    if "[" in section or "]" in section:
        raise ValueError(f"fio job name {section!r} contains a bracket; refused")
    for key, value in options:
        if not _OPTION.match(key):
            raise ValueError(
                f"fio option name {key!r} in job {section!r} is not a word "
                "(letters, digits, underscores); refused"
            )
        problem = unchecked_problem(key, value or "")
        if problem:
            raise ValueError(f"job {section!r}: {problem}")
        problem = control_problem(value or "", f"fio option {key}=")
        if problem:
            raise ValueError(f"job {section!r}: {problem}")
        problem = misread_problem(key, value or "")
        if problem:
            raise ValueError(f"job {section!r}: {problem}")


RW = Literal["read", "write", "randread", "randwrite", "rw", "randrw", "readwrite", "trim"]


def fio_seconds(seconds: float) -> str:
    """A time option's value as fio reads it: whole seconds as a plain number, anything else in
    milliseconds. fio 3.33 reads a time's digits as an integer: ``runtime=1.5`` ran 1 s and
    ``runtime=0.5`` about 0.1 s; and ``%g`` writes a long time as ``3.15576e+07``, which fio
    reads as something else (``runtime=2e+00`` ran 0 s). Measured with fio 3.33."""
    if seconds == int(seconds):
        return str(int(seconds))
    return f"{max(1, round(seconds * 1000))}ms"


@dataclass
class FioJob:
    name: str
    rw: RW
    bs: int  # bytes
    size: int | None = None  # bytes per job (per file); None: the whole file/device
    # fio's syntax (see the module docstring): names separated by ':', '\:' a colon of a name;
    # fio_names() gives the paths, fio_path() writes one path
    filename: str | None = None  # files or devices
    directory: str | None = None  # or a directory in which fio creates its files
    iodepth: int = 1
    numjobs: int = 1
    rwmixread: int | None = None  # % reads, for rw/randrw
    direct: bool = True
    ioengine: str = "libaio"
    runtime: float | None = None  # seconds
    ramp_time: float | None = None  # seconds of warm-up excluded from the results
    time_based: bool = True
    rate_iops: int | None = None  # per job (fio applies it to each of numjobs)
    rate_process: Literal["linear", "poisson"] | None = None
    group_reporting: bool = True
    stonewall: bool = False  # wait for the previous job to finish (sequential jobs in one file)
    extra: dict[str, str] = field(default_factory=dict)

    def options(self) -> list[tuple[str, str | None]]:
        """(option, value) pairs in fio's syntax; value None is a flag option."""
        opts: list[tuple[str, str | None]] = [("rw", self.rw), ("bs", str(self.bs))]
        if self.size is not None:
            opts.append(("size", str(self.size)))
        if self.filename:
            opts.append(("filename", self.filename))
        if self.directory:
            opts.append(("directory", self.directory))
        opts += [
            ("iodepth", str(self.iodepth)),
            ("numjobs", str(self.numjobs)),
            ("direct", "1" if self.direct else "0"),
            ("ioengine", self.ioengine),
        ]
        if self.rwmixread is not None:
            opts.append(("rwmixread", str(self.rwmixread)))
        if self.runtime is not None:
            opts.append(("runtime", fio_seconds(self.runtime)))
        if self.ramp_time:
            opts.append(("ramp_time", fio_seconds(self.ramp_time)))
        if self.time_based:
            opts.append(("time_based", None))
        if self.rate_iops is not None:
            opts.append(("rate_iops", str(self.rate_iops)))
        if self.rate_process:
            opts.append(("rate_process", self.rate_process))
        if self.group_reporting:
            opts.append(("group_reporting", None))
        if self.stonewall:
            opts.append(("stonewall", None))
        opts += list(self.extra.items())
        return opts


def job_file(jobs: list[FioJob], global_options: dict[str, str] | None = None) -> str:
    """The text of a fio job file running ``jobs`` (in order when each has stonewall).
    Raises ValueError for a name or value that would smuggle a line in (``check_text``)."""
    lines: list[str] = []
    if global_options:
        check_text("global", [(k, v) for k, v in global_options.items()])
        lines.append("[global]")
        lines += [f"{k}={v}" if v != "" else k for k, v in global_options.items()]
        lines.append("")
    for job in jobs:
        options = job.options()
        check_text(job.name, options)
        lines.append(f"[{job.name}]")
        lines += [k if v is None else f"{k}={v}" for k, v in options]
        lines.append("")
    return "\n".join(lines)
