"""From the parameter stream to definitions: ``load_vdbench(path)``."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from assay.errors import ParseError
from assay.inputfile import is_file
from assay.vdbench.definitions import (
    ForLoop,
    HostDef,
    LunMap,
    Param,
    RunDef,
    StorageDef,
    Untranslated,
    VdbenchConfig,
    Where,
    WorkloadDef,
)
from assay.vdbench.keywords import (
    FOR_KEYS,
    GENERAL_KEYS,
    HD_KEYS,
    RD_KEYS,
    SD_KEYS,
    WD_KEYS,
    loop_name,
)
from assay.vdbench.lines import SourceLine, read_file
from assay.vdbench.syntax import (
    bad_value,
    name_list,
    numbers_of,
    one_number,
    param_statements,
    read_param,
    seek_items,
    seek_of,
    text_of,
)

# ---------------------------------------------------------------------------- loading


def load_vdbench(path: str | os.PathLike[str], lun_map: LunMap | None = None) -> VdbenchConfig:
    """Read a Vdbench parameter file and its includes.

    ``lun_map`` remaps the ``lun=`` paths to what fio should open: a function, or a mapping
    of exact paths or directory prefixes (the longest matching prefix wins), e.g.
    ``{"/mnt/vdb1": "/scratch/vdb1"}``.
    """
    p = Path(path)
    if not is_file(p):  # also a name too long to be one
        raise ParseError("Vdbench parameter file not found", source=str(path))
    lines: list[SourceLine] = []
    config = VdbenchConfig(path=str(path))
    read_file(p, str(path), (p.resolve(),), lines, config.files)
    _Builder(config, lun_map).run(param_statements(lines))
    if not config.runs and not config.skipped:
        raise ParseError("no run definition (rd=) found", source=str(path))
    return config


def _map_lun(lun: str, lun_map: LunMap | None) -> str:
    if lun_map is None:
        return lun
    if callable(lun_map):
        return lun_map(lun)
    if lun in lun_map:
        return lun_map[lun]
    best = ""
    for prefix in lun_map:
        stem = prefix.rstrip("/")
        if (lun.startswith(stem + "/") or lun == stem) and len(stem) > len(best):
            best = stem
    if best:
        target = lun_map[best] if best in lun_map else lun_map[best + "/"]
        return target.rstrip("/") + lun[len(best) :]
    return lun


# Definition keywords that start a new definition in each phase (Vdbench's readParms()
# loops: HostParms stops at rg/sd/fsd/wd/fwd/rd, SD_entry at wd/rd/fwd, WD_entry at rd/fwd;
# assay also lets fsd/fwd/rg start their own, skipped, definition after SDs and WDs);
# anywhere else the same keyword is a parameter (rd=...,wd=, wd=...,sd=, sd=...,hd=).
_STARTS: dict[str, frozenset[str]] = {
    "general": frozenset({"hd", "host", "rg", "sd", "fsd", "wd", "fwd", "rd"}),
    "hd": frozenset({"hd", "host", "rg", "sd", "fsd", "wd", "fwd", "rd"}),
    "rg": frozenset({"rg", "sd"}),
    "sd": frozenset({"sd", "rg", "fsd", "wd", "fwd", "rd"}),
    "fsd": frozenset({"fsd", "fwd", "rd"}),
    "wd": frozenset({"wd", "fsd", "fwd", "rd"}),
    "fwd": frozenset({"fwd", "rd"}),
    "rd": frozenset({"rd"}),
}
_KIND = {"host": "hd"}
_TABLES = {"hd": HD_KEYS, "sd": SD_KEYS, "wd": WD_KEYS, "rd": RD_KEYS}
_SKIPPED = {
    "fsd": "file system definitions (fsd=) are not translated to fio: only raw I/O (sd=) is",
    "fwd": "file system workloads (fwd=) are not translated to fio: only raw I/O (wd=) is",
    "rg": "replay groups (rg=) are not translated",
}


class _Builder:
    """Vdbench's readParms() loops as one state machine over the parameter stream.

    A definition's params are collected (its type's defaults first, then its own) and turned
    into the data class when the next definition starts: Vdbench clones the default when it
    meets "xx=name", so a later "xx=default" does not change definitions already made.
    """

    def __init__(self, config: VdbenchConfig, lun_map: LunMap | None) -> None:
        self.config = config
        self.lun_map = lun_map
        self.phase = "general"
        self.current: HostDef | StorageDef | WorkloadDef | RunDef | None = None
        self.is_default = False
        self.defaults: dict[str, list[Param]] = {"hd": [], "sd": [], "wd": [], "rd": []}
        self.pending: list[Param] = []

    def run(self, statements: Iterable[tuple[str, Where]]) -> None:
        for text, where in statements:
            keyword = text.split("=", 1)[0].strip().lower()
            if keyword in _STARTS[self.phase]:
                self._start(_KIND.get(keyword, keyword), text, where)
            else:
                self._add(text, where)
        self._finish()

    def _start(self, kind: str, text: str, where: Where) -> None:
        self._finish()
        self.phase = kind
        self.is_default = False
        if kind in _SKIPPED:
            self.config.skipped.append(Untranslated(text, where.line, _SKIPPED[kind], where.file))
            return
        param = read_param(text, where, _TABLES[kind], f"{kind}=")
        name = text_of(param)
        if name == "default":
            self.is_default = True
            return
        self.pending = [*self.defaults[kind], param]
        self.current = _new(kind, name, where)

    def _add(self, text: str, where: Where) -> None:
        if self.phase in _SKIPPED:
            return  # parameters of an fsd/fwd/rg definition: named with it, not checked
        if self.phase == "general":
            self.config.general.append(
                read_param(text, where, GENERAL_KEYS, "the general parameters")
            )
            return
        name = "default" if self.is_default or self.current is None else self.current.name
        param = read_param(text, where, _TABLES[self.phase], f"{self.phase}={name}")
        if self.is_default:
            if param.name == "lun":
                raise bad_value(param, "lun= is not allowed for sd=default (SD_entry.java)")
            self.defaults[self.phase].append(param)
        else:
            self.pending.append(param)

    def _finish(self) -> None:
        current, self.current = self.current, None
        params, self.pending = self.pending, []
        if isinstance(current, HostDef):
            _apply_host(current, params)
            self.config.hosts.append(current)
        elif isinstance(current, StorageDef):
            _apply_storage(current, params, self.lun_map)
            self.config.storage.append(current)
        elif isinstance(current, WorkloadDef):
            _apply_workload(current, params)
            self.config.workloads.append(current)
        elif isinstance(current, RunDef):
            _apply_run(current, params)
            self.config.runs.append(current)


def _new(kind: str, name: str, where: Where) -> HostDef | StorageDef | WorkloadDef | RunDef:
    if kind == "hd":
        return HostDef(name, where)
    if kind == "sd":
        return StorageDef(name, where)
    if kind == "wd":
        return WorkloadDef(name, where)
    return RunDef(name, where)


def _apply_host(host: HostDef, params: list[Param]) -> None:
    for p in params:
        if p.name in ("hd", "host"):
            continue
        host.params.append(p)
        if p.name == "system":
            host.system = text_of(p)
        elif p.name == "user":
            host.user = text_of(p)
        elif p.name == "shell":
            host.shell = text_of(p)
        elif p.name == "vdbench":
            host.vdbench = text_of(p)
        elif p.name == "jvms":
            host.jvms = int(one_number(p))
        elif p.name == "clients":
            host.clients = int(one_number(p))


def _apply_storage(sd: StorageDef, params: list[Param], lun_map: LunMap | None) -> None:
    for p in params:
        if p.name == "sd":
            continue
        sd.params.append(p)
        if p.name == "lun":
            sd.lun = text_of(p)
            sd.target = _map_lun(sd.lun, lun_map)
        elif p.name == "size":
            values = numbers_of(p)
            size = values[0] / (values[1] if len(values) > 1 else 1)  # size=(total,count)
            sd.size = int(size)
        elif p.name == "threads":
            values = numbers_of(p)
            sd.threads = int(values[0]) // max(1, int(values[1]) if len(values) > 1 else 1)
        elif p.name in ("host", "hd"):
            sd.hosts = tuple(name_list(p))
        elif p.name == "openflags":
            sd.openflags = tuple(item.text.lower() for item in p.items)
        elif p.name == "offset":
            sd.offset = int(one_number(p))
        elif p.name == "align":
            sd.align = int(one_number(p))
    if sd.lun is None:
        raise ParseError(f"sd={sd.name} has no lun=", source=sd.where.file, line=sd.where.line)


def _apply_workload(wd: WorkloadDef, params: list[Param]) -> None:
    for p in params:
        if p.name == "wd":
            continue
        wd.params.append(p)
        if p.name == "sd":
            wd.sd_names = tuple(name_list(p))
        elif p.name == "xfersize":
            wd.xfersize = tuple(int(v) for v in numbers_of(p))
            _check_xfersize(wd.xfersize, p)
        elif p.name in ("readpct", "rdpct"):
            wd.rdpct = int(one_number(p))  # WD_entry: "wd.readpct = (int) prm.numerics[0]"
        elif p.name in ("writepct", "wrpct"):
            wd.rdpct = 100 - int(one_number(p))
        elif p.name == "seekpct":
            wd.seekpct = seek_items(p)
        elif p.name in ("host", "hd"):
            wd.hosts = tuple(name_list(p))
        elif p.name == "openflags":
            wd.openflags = tuple(item.text.lower() for item in p.items)
        if p.name in ("readpct", "rdpct", "writepct", "wrpct") and not 0 <= wd.rdpct <= 100:
            raise bad_value(p, "read percentage must be 0-100")
    if not wd.sd_names:
        raise ParseError(f"wd={wd.name} has no sd=", source=wd.where.file, line=wd.where.line)


def _check_xfersize(sizes: tuple[int, ...], p: Param) -> None:
    """WD_entry.parseXfersize: one size, (size,pct,...) pairs adding to 100, or (min,max,align)."""
    if len(sizes) == 3:
        if sizes[0] >= sizes[1]:
            raise bad_value(p, "xfersize=(min,max,align) needs min < max")
        if sizes[2] == 0 or sizes[2] % 512:
            raise bad_value(p, "xfersize=(min,max,align): align must be a non-zero multiple of 512")
    elif len(sizes) > 1:
        if len(sizes) % 2:
            raise bad_value(p, "an xfersize distribution is pairs: (size,percent,size,percent,...)")
        if round(sum(sizes[1::2])) != 100:
            raise bad_value(p, "xfersize distribution percentages must add up to 100")


def _apply_run(rd: RunDef, params: list[Param]) -> None:
    pending_rates: list[float] | None = None
    for p in params:
        if p.name == "rd":
            continue
        rd.params.append(p)
        n = p.name
        if n == "wd":
            rd.wd_names = tuple(name_list(p))
        elif n == "sd":
            rd.sd_names = tuple(name_list(p))
        elif n == "fwd":
            rd.fwd_names = tuple(name_list(p))
        elif n == "iorate":
            words = [item.text.lower() for item in p.items]
            if words == ["curve"]:
                rd.iorate = "curve"
            elif words == ["max"]:
                rd.iorate = "max"
            else:
                rates = numbers_of(p)
                rd.iorate = rates[0]
                # RD_entry: several rates become a 'foriorate' loop, added last
                pending_rates = rates if len(rates) > 1 else None
        elif n == "curve":
            rd.curve = tuple(numbers_of(p))
        elif n == "stopcurve":
            rd.stopcurve = one_number(p)
        elif n == "elapsed":
            rd.elapsed = one_number(p)
        elif n == "interval":
            rd.interval = one_number(p)
        elif n == "warmup":
            rd.warmup = one_number(p)
        elif n == "maxdata":
            rd.maxdata = one_number(p)
        elif n == "openflags":
            rd.openflags = tuple(item.text.lower() for item in p.items)
        elif n == "distribution":
            # RD_entry.useDistribution: exponential (default), uniform or deterministic
            word = p.items[0].text.lower() if p.items else ""
            rd.distribution = next(
                (
                    d
                    for d in ("exponential", "uniform", "deterministic")
                    if word and d.startswith(word)
                ),
                word,
            )
        elif n in FOR_KEYS:
            loop = loop_name(n)
            if loop == "seekpct":
                values: tuple[float | str, ...] = tuple(seek_of(i.text, p) for i in p.items)
            elif loop == "operations":
                values = tuple(item.text for item in p.items)
            else:
                values = tuple(numbers_of(p))
            # For_loop(): a loop of the same type replaces the earlier one, at the end
            rd.for_loops = [f for f in rd.for_loops if f.name != loop]
            rd.for_loops.append(ForLoop(loop, values, p.where))
    if pending_rates is not None:
        rd.for_loops = [f for f in rd.for_loops if f.name != "iorate"]
        rd.for_loops.append(ForLoop("iorate", tuple(pending_rates), rd.where))
