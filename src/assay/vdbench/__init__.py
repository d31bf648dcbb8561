"""Vdbench parameter files (raw I/O: ``hd=``, ``sd=``, ``wd=``, ``rd=``) and their fio equivalent.

``load_vdbench(path)`` reads a parameter file and its ``include=`` files into data classes
(``HostDef``, ``StorageDef``, ``WorkloadDef``, ``RunDef``) that keep the file and line of each
definition. ``translate(config)`` turns every run definition, expanded over its for-loops,
into fio jobs doing the same I/O; what has no fio equivalent is returned as ``Untranslated``
items, never silently dropped.

Sources. "Guide" is the Vdbench 5.04.07 Users Guide (Henk Vandenbergh, Oracle, May 2018), read
in its bilingual copy github.com/sine-io/VdbenchUsersGuide-cn (sections named below). Where the
guide is silent the behaviour is the one of Vdbench's own parameter scanner, Vdbench 5.04.06
source as published in github.com/itfanr/vdbench: ``Vdb/Vdb_scan.java`` (reading, comments,
continuation, values), ``Vdb/HostParms.java``, ``Vdb/SD_entry.java``, ``Vdb/WD_entry.java``,
``Vdb/RD_entry.java`` and ``Vdb/For_loop.java`` (keywords, defaults, for-loops).

An input adapter: it reads a file written for another tool and produces assay data (fio jobs,
a suite); nothing here runs anything or knows a later stage. Modules, in the order data flows:

* ``keywords``: Vdbench's keyword tables (which keyword an abbreviation stands for);
* ``syntax``: reading a parameter file as Vdb_scan.java does (lines, comments, includes,
  ``keyword=value`` parameters, lists, ranges, numbers);
* ``definitions``: the data classes (``HostDef``, ``StorageDef``, ``WorkloadDef``, ``RunDef``,
  ``VdbenchConfig``, ``TranslatedRun``...);
* ``load``: parameters -> definitions (``load_vdbench``);
* ``translate`` and ``notes``: definitions -> fio jobs, and what has no fio equivalent;
* ``suite``: translated runs -> an assay suite of ``fio`` benches (``vdbench_suite``).
"""

from assay.vdbench.definitions import (
    ForLoop,
    HostDef,
    Param,
    ParamElement,
    RunDef,
    StorageDef,
    TranslatedRun,
    Translation,
    Untranslated,
    VdbenchConfig,
    Where,
    WorkloadDef,
)
from assay.vdbench.load import load_vdbench
from assay.vdbench.translate import translate

__all__ = [
    "ForLoop",
    "HostDef",
    "Param",
    "ParamElement",
    "RunDef",
    "StorageDef",
    "TranslatedRun",
    "Translation",
    "Untranslated",
    "VdbenchConfig",
    "Where",
    "WorkloadDef",
    "load_vdbench",
    "translate",
]
