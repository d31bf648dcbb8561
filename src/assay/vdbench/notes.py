"""What a translation leaves out: every keyword without a fio equivalent, named with its
file and line (``Untranslated``), never silently dropped.
"""

from __future__ import annotations

from assay.vdbench.definitions import Param, Untranslated, VdbenchConfig, Where
from assay.vdbench.keywords import OPENFLAGS, TRANSLATED_LOOPS


class Notes:
    def __init__(self) -> None:
        self.items: list[Untranslated] = []
        self._seen: set[tuple[str, str, int]] = set()

    def add(self, item: str, where: Where, reason: str) -> None:
        key = (item, where.file, where.line)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append(Untranslated(item, where.line, reason, where.file))


_SD_UNTRANSLATED = {
    "count": "count=(start,n) repeats an SD over numbered LUNs; expand it by hand",
    "hitarea": "cache hit area (rhpct/whpct) has no fio equivalent",
    "kstat": "Solaris kstat reporting only",
    "instance": "Solaris kstat reporting only",
    "replay": "I/O trace replay is not translated",
    "journal": "data validation journal has no fio equivalent",
    "resetlun": "SCSI resets are not issued",
    "resetbus": "SCSI resets are not issued",
    "range": "an SD range= (percent of the LUN) is not translated",
    "dedup": "data deduplication patterns are not generated",
    "streams": "streams are not translated",
}
_WD_UNTRANSLATED = {
    "skew": "skew between workloads sharing SDs is not reproduced: each WD gets full threads",
    "range": "a WD range= (percent of the SD) is not translated",
    "hotband": "hot bands are not translated",
    "stride": "seek strides are not translated",
    "priority": "workload priorities are not translated",
    "iorate": "a WD-level iorate= (with priority=) is not translated; the RD rate is used",
    "rhpct": "cache read hits (rhpct) have no fio equivalent",
    "whpct": "cache write hits (whpct) have no fio equivalent",
    "user": "user-written workload classes are not translated",
    "threads": "WD threads= (with concatenatesds=yes) is not translated; SD threads are used",
    "streams": "streams are not translated",
}
_RD_UNTRANSLATED = {
    "interval": None,  # kept as data: the engine's reporting interval
    "pause": "a pause after the run is not inserted",
    "startcmd": "commands around runs are not executed",
    "start_cmd": "commands around runs are not executed",
    "endcmd": "commands around runs are not executed",
    "end_cmd": "commands around runs are not executed",
    "format": "SD formatting runs are not translated: fill with a write run instead",
    "mount": "mount commands are not executed",
    "replay": "I/O trace replay is not translated",
    "maxdataread": "maxdataread= is not translated (maxdata= is)",
    "maxdatawritten": "maxdatawritten= is not translated (maxdata= is)",
    "fwdrate": "file system runs are not translated",
    "operations": "file system runs are not translated",
    "fsd": "file system runs are not translated",
}


def note_static(config: VdbenchConfig, notes: Notes) -> None:
    """What cannot be translated, definition by definition (named, never dropped)."""
    for p in config.general:
        notes.add(str(p), p.where, "Vdbench general parameter: no effect on the fio jobs")
    notes.items.extend(config.skipped)
    for host in config.hosts:
        remote = host.system or host.shell or host.user or host.name != "localhost"
        if remote:
            detail = ", ".join(
                f"{k}={v}"
                for k, v in (("system", host.system), ("shell", host.shell), ("user", host.user))
                if v
            )
            notes.add(
                f"hd={host.name}" + (f" ({detail})" if detail else ""),
                host.where,
                "remote Vdbench host (started with rsh/ssh): the jobs are run locally or with "
                "fio's client/server mode; TranslatedRun.hosts names each job's host",
            )
        for p in host.params:
            if p.name == "jvms":
                notes.add(
                    str(p), p.where, "Vdbench JVM count per host: fio runs one process per job"
                )
            elif p.name in ("clients", "mount", "vdbench"):
                notes.add(str(p), p.where, f"hd {p.name}= has no fio equivalent")
    for sd in config.storage:
        for p in sd.params:
            if p.name in _SD_UNTRANSLATED:
                notes.add(f"sd={sd.name},{p}", p.where, _SD_UNTRANSLATED[p.name])
            elif p.name == "openflags":
                _note_flags(sd.openflags, p, notes)
    for wd in config.workloads:
        for p in wd.params:
            if p.name in _WD_UNTRANSLATED:
                notes.add(f"wd={wd.name},{p}", p.where, _WD_UNTRANSLATED[p.name])
            elif p.name == "seekpct" and any(
                "poisson".startswith(i.text.lower()) for i in p.items if i.text
            ):
                notes.add(f"wd={wd.name},{p}", p.where, "poisson seek distances are not translated")
            elif p.name == "openflags":
                _note_flags(wd.openflags, p, notes)
            elif (
                p.name == "xfersize" and len(wd.xfersize) == 3 and wd.xfersize[2] != wd.xfersize[0]
            ):
                notes.add(
                    f"wd={wd.name},{p}",
                    p.where,
                    "fio's bsrange sizes are multiples of the minimum, not of Vdbench's align",
                )
    for rd in config.runs:
        for p in rd.params:
            reason = _RD_UNTRANSLATED.get(p.name)
            if reason:
                notes.add(f"rd={rd.name},{p}", p.where, reason)
            elif p.name == "distribution" and (
                rd.distribution not in ("exponential", "deterministic") or len(p.items) > 1
            ):
                notes.add(
                    f"rd={rd.name},{p}",
                    p.where,
                    "only exponential or deterministic arrivals, no variable (burst) rates",
                )
            elif p.name == "openflags":
                _note_flags(rd.openflags, p, notes)
        for loop in rd.for_loops:
            if loop.name not in TRANSLATED_LOOPS:
                notes.add(
                    f"rd={rd.name},for{loop.name}",
                    loop.where,
                    f"for{loop.name}= changes nothing fio does here (runs repeat unchanged)",
                )


def _note_flags(flags: tuple[str, ...], p: Param, notes: Notes) -> None:
    for flag in flags:
        if flag not in OPENFLAGS:
            notes.add(f"openflags={flag}", p.where, "only o_direct, directio, o_sync, o_dsync")
