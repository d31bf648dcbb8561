"""``assay check --junit FILE``: the verdicts as JUnit XML, the format CI systems show.

One ``<testsuite>`` per node (and one for the links), one ``<testcase>`` per check of it:
``classname`` = ``assay.check.<node>``, ``name`` = the check. A FAIL is a ``<failure>`` whose
message is the figure against the baseline; a WARN passes (JUnit has no warning) and says so in
its ``<system-out>``, as a PASS states its figures there too. Written with the standard library's
ElementTree, so every name and message is escaped; what XML cannot hold at all (a control
character, a lone surrogate of a non-UTF-8 name) is shown as ``\x1b`` (``textutil.xml_text``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterable

from assay.analysis.check.health import Verdict, worst_first
from assay.report.check import margin_text
from assay.textutil import xml_text


def _text(v: Verdict) -> str:
    parts = [f"{v.grade}: {v.check} on {v.subject}: {v.shown} vs {v.expected} "
             f"({margin_text(v)}), {v.noise}" + (f" ({v.test})" if v.test else ""),
             f"judged against {v.against}"]  # fmt: skip
    parts += [x for x in (v.retest, v.note) if x]
    return xml_text("; ".join(parts))


def junit_xml(
    verdicts: Iterable[Verdict], *, suite: str, run_id: str, seconds: float, timestamp: str
) -> str:
    """The JUnit document (see the module docstring)."""
    groups: dict[str, list[Verdict]] = defaultdict(list)
    for v in worst_first(verdicts):
        groups["links" if v.kind == "link" else v.subject].append(v)
    total = sum(len(vs) for vs in groups.values())
    failed = sum(1 for vs in groups.values() for v in vs if v.grade == "FAIL")
    root = ET.Element(
        "testsuites", name=xml_text(f"assay check {suite}"), tests=str(total), failures=str(failed),
        errors="0", time=f"{seconds:.1f}",
    )  # fmt: skip
    for name in sorted(groups, key=lambda n: (n == "links", n)):
        vs = groups[name]
        ts = ET.SubElement(
            root, "testsuite", name=xml_text(name), tests=str(len(vs)),
            failures=str(sum(1 for v in vs if v.grade == "FAIL")), errors="0", skipped="0",
            time="0", timestamp=timestamp,
        )  # fmt: skip
        props = ET.SubElement(ts, "properties")
        ET.SubElement(props, "property", name="run_id", value=xml_text(run_id))
        ET.SubElement(props, "property", name="suite", value=xml_text(suite))
        for v in vs:
            case = ET.SubElement(
                ts, "testcase", classname=xml_text(f"assay.check.{v.subject}"),
                name=xml_text(v.check), time="0",
            )  # fmt: skip
            text = _text(v)
            if v.grade == "FAIL":
                fail = ET.SubElement(case, "failure", message=text, type="FAIL")
                fail.text = text
            ET.SubElement(case, "system-out").text = text
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
