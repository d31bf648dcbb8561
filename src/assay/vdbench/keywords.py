"""Vdbench's keyword tables: which canonical keyword an abbreviation stands for, per
definition type, in the order Vdbench's ``readParms()`` tests them.
"""

from __future__ import annotations

from collections.abc import Iterable

# ---------------------------------------------------------------------------- keywords
# Each table lists the canonical keywords of one definition type in the order Vdbench's
# readParms() tests them; "=" marks keywords Vdbench compares exactly, "x*" any keyword that
# starts with x (SD_entry: keyword.startsWith("dedup")); the others accept any prefix.


def _keys(words: str) -> tuple[str, ...]:
    return tuple(words.split())


HD_KEYS = ("=hd", "=host", "system", "vdbench", "shell", "user", "jvms", "clients", "mount")
SD_KEYS = _keys(
    "=sd host =hd lun count size threads hitarea offset align kstat instance replay journal "
    "resetlun resetbus openflags range dedup* streams "
)
WD_KEYS = _keys(
    "=wd =sd skew xfersize readpct rdpct writepct wrpct range hotband seekpct stride priority "
    "iorate rhpct whpct host =hd openflags =user threads streams "
)
# For_loop.checkForLoop(): the forxxx names first, then (since 5.02) the plain names.
FOR_KEYS = _keys(
    "forxfersize forthreads forrdpct forrhpct forwhpct forseekpct forhitarea forcompratio "
    "forcompression fordepth forwidth forfiles forsizes fortotalsize forwss forworkingsetsize "
    "foroperations xfersize threads rdpct rhpct whpct seekpct hitarea compratio compression "
    "depth width files sizes totalsize wss workingsetsize "
)
RD_KEYS = (
    *_keys(
        "=rd =wd =sd =fsd iorate =maxdata =maxdataread =maxdatawritten curve stopcurve elapsed "
        "interval warmup =replay pause "
    ),
    *FOR_KEYS,
    *_keys(
        "distribution startcmd start_cmd endcmd end_cmd =fwd fwdrate operations format openflags "
        "mount "
    ),
)
# General parameters (guide 1.7.4): before any HD/SD; all are Vdbench-run options.
GENERAL_KEYS = _keys(
    "abort_failed_skew compratio concatenatesds create_anchors data_errors dedupratio "
    "dedupunit dedupsets deduphotsets dedupflipflop endcmd formatsds formatxfersize "
    "fwd_thread_adjust histogram ios_per_jvm journal loop messagescan monitor pattern port "
    "report report_run_totals startcmd showlba timeout validate "
)


def loop_name(keyword: str) -> str:
    """The loop a for-loop keyword sets (For_loop labels without "for"): forthreads -> threads."""
    base = keyword[3:] if keyword.startswith("for") else keyword
    return "wss" if base == "workingsetsize" else base


TRANSLATED_LOOPS = ("xfersize", "threads", "rdpct", "seekpct", "iorate")
TIME_KEYS = ("elapsed", "interval", "warmup", "pause")  # "m" means minutes (Vdb_scan.java)


def resolve_keyword(keyword: str, table: Iterable[str]) -> str | None:
    """The canonical keyword ``keyword`` abbreviates, in Vdbench's order; None if unknown."""
    for entry in table:
        if entry.startswith("="):
            if keyword == entry[1:]:
                return entry[1:]
        elif entry.endswith("*"):
            if keyword.startswith(entry[:-1]):
                return entry[:-1]
        elif entry.startswith(keyword):
            return entry
    return None


# openflags= values fio can do (SD_entry.openOneSd): O_DIRECT -> direct=1, O_SYNC/O_DSYNC -> sync=
OPENFLAGS = {"o_direct": "direct", "directio": "direct", "o_sync": "sync", "o_dsync": "dsync"}
