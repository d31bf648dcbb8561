"""Reference sets: the shipped transcriptions, the loader's errors, user sets and the CLI."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from assay.errors import AssayError
from assay.references import ReferenceError, available, load, load_file
from conftest import run_cli

BUILTIN = ("azure-hb", "azure-hc", "charmed-hpc", "azure-netapp-files")


def _points(name: str, metric: str, **params):
    ref = load(name)
    return [
        p
        for p in ref.points
        if p.metric == metric and all(p.params.get(k) == v for k, v in params.items())
    ]


def test_every_builtin_set_loads_with_its_provenance():
    sets = available()
    for name in BUILTIN:
        assert sets[name][1], f"{name} is not a built-in"
        ref = load(name)
        assert ref.title and ref.source.startswith("seeds/") and ref.points
    hb = load("azure-hb")
    assert hb.date == "2019-05-15" and len(hb.summary) == 5
    # four MPIs x 12 sizes of osu_latency, 22 sizes of osu_bw, 12 rows of ib_send_lat
    assert len(_points("azure-hb", "p2p.latency")) == 48
    assert len(_points("azure-hb", "p2p.bandwidth")) == 22
    assert len(_points("azure-hb", "rdma.latency", benchmark="ib_send_lat")) == 13  # + summary
    assert len(_points("azure-hc", "p2p.latency")) == 36  # three MPIs on the HC page
    assert load("charmed-hpc").url.startswith("https://github.com/charmed-hpc/")


def test_values_are_converted_to_si_from_the_units_the_page_printed():
    (lat,) = _points("azure-hb", "p2p.latency", mpi="mpich", size=2)
    assert lat.value == pytest.approx(2.44e-6) and lat.label == "MPICH 3.3 + CH4"
    (bw,) = _points("azure-hb", "p2p.bandwidth", size=4194304)
    assert bw.value == pytest.approx(12061.33e6)  # OSU's MB is 10^6 bytes
    (rdma,) = _points("azure-hb", "rdma.bandwidth")
    assert rdma.value == pytest.approx(96.5e9 / 8)
    (anf,) = _points("azure-netapp-files", "storage.bandwidth")
    assert anf.value == pytest.approx(4.5 * 2**30)
    (t4,) = _points("charmed-hpc", "gpu.sgemm")
    assert t4.value == pytest.approx(4454e9) and t4.system == "1x Standard_NC4as_T4_v3"


def test_approximate_values_ranges_and_bounds_stay_what_was_published():
    (node,) = _points("azure-hb", "memory.triad", scope="node")
    assert node.approx and node.published == "~260 GB/s" and node.pick == "best"
    (ccx,) = _points("azure-hb", "memory.triad", scope="l3")
    assert (ccx.low, ccx.high) == (pytest.approx(32e9), pytest.approx(33e9))
    assert ccx.value == pytest.approx(32.5e9)
    (iops,) = _points("azure-netapp-files", "storage.iops")
    assert iops.low == 300000 and iops.high is None and "over" in iops.published
    (summary_lat,) = [p for p in _points("azure-hb", "rdma.latency", size=2) if p.stat == "min"]
    assert summary_lat.value == pytest.approx(2.35e-6)


def test_a_published_statistic_that_cannot_be_true_is_dropped_and_said():
    rows = {p.params["size"]: p for p in _points("azure-hc", "rdma.latency") if p.stat == "value"}
    assert rows[128].stats.mean == pytest.approx(1.89e-6)  # min 1.88 <= 1.89: kept
    assert rows[256].stats.mean is None  # t_avg 2.02 below t_min 2.24
    assert "outside min..max" in rows[256].note
    assert rows[256].value == pytest.approx(2.28e-6)  # t_typical, the figure itself, stays


def test_both_printed_units_of_a_bandwidth_table_agree(tmp_path: Path):
    # the loader checks the Gb/s column against the MB/s one; a slip is an error naming the row
    original = (load("azure-hb").path or Path()).read_text()
    text = original.replace("[64, 126.29, 1.01]", "[64, 126.29, 1.5]")
    assert text != original
    path = tmp_path / "azure-hb.toml"
    path.write_text(text)
    with pytest.raises(ReferenceError) as exc:
        load_file(path)
    line = text.splitlines().index("    [64, 126.29, 1.5],") + 1
    assert f"{path}:{line}: field table.5.rows.5" in str(exc.value)
    assert "1.5 Gb/s disagrees" in str(exc.value)


def _write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.toml"
    path.write_text(text)
    return path


GOOD_POINT = '[[point]]\nmetric = "memory.triad"\nvalue = 10\nunit = "GB/s"\n'
HEAD = f'title = "t"\n{GOOD_POINT}'  # lines 1-5
LAT = '[[point]]\nmetric = "p2p.latency"\n'


@pytest.mark.parametrize(
    ("body", "line", "field", "words"),
    [
        (f'{HEAD}\n{LAT}value = 1\nunit = "GB/s"\n',
         10, "point.1.unit", "p2p.latency is measured in s"),
        (f'{HEAD}{LAT}value = 1\nunit = "us"\ncolour = 1\n',
         10, "point.1.colour", "Extra inputs"),
        (f'{HEAD}{LAT}value = -1\nunit = "us"\n',
         8, "point.1.value", "greater than 0"),
        ('title = "t"\n[[table]]\nmetric = "p2p.latency"\nunit = "us"\n'
         'columns = ["size", "value"]\nrows = [\n    [2, 1.0],\n    [4],\n]\n',
         8, "table.0.rows.1", "1 values for 2 columns"),
        (f'{GOOD_POINT}', 1, "title", "Field required"),
        (f'title = "t"\n[tolerance]\ndefault = {{ lower = 0.1, upper = 0.1 }}\n{GOOD_POINT}',
         3, "tolerance.default.lower", "less than or equal to 0"),
        # issue 28: a band that calls any figure 'same', a figure that is no number
        (f'title = "t"\n[tolerance]\ndefault = {{ lower = -inf, upper = 0.1 }}\n{GOOD_POINT}',
         3, "tolerance.default.lower", "finite number"),
        (f'title = "t"\n[tolerance]\ndefault = {{ lower = -0.1, upper = nan }}\n{GOOD_POINT}',
         3, "tolerance.default.upper", "finite number"),
        (f'title = "t"\n[tolerance]\ndefault = {{ lower = -5, upper = 0.1 }}\n{GOOD_POINT}',
         3, "tolerance.default.lower", "greater than or equal to -1"),
        (f'title = "t"\n[tolerance]\ndefault = {{ lower = -0.1, upper = 1e9 }}\n{GOOD_POINT}',
         3, "tolerance.default.upper", "less than or equal to 10"),
        (f'{HEAD}{LAT}value = inf\nunit = "us"\n', 8, "point.1.value", "finite number"),
    ],
)  # fmt: skip
def test_a_malformed_file_is_an_error_naming_file_line_and_field(
    tmp_path: Path, body: str, line: int, field: str, words: str
):
    path = _write(tmp_path, "mine", body)
    with pytest.raises(ReferenceError) as exc:
        load_file(path)
    text = str(exc.value)
    assert text.startswith(f"{path}:{line}: field {field}"), text
    assert words in text
    assert isinstance(exc.value, AssayError)


def test_toml_syntax_errors_and_a_wrong_name_are_errors_too(tmp_path: Path):
    path = _write(tmp_path, "broken", 'title = "t"\nvalue = = 3\n')
    with pytest.raises(ReferenceError, match=r"broken.toml: not valid TOML: .*line 2"):
        load_file(path)
    path = _write(tmp_path, "other", f'name = "mine"\ntitle = "t"\n{GOOD_POINT}')
    with pytest.raises(ReferenceError, match=r"other.toml:1: field name: 'mine' differs"):
        load_file(path)


def test_user_sets_come_from_assay_references_and_override_builtins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("ASSAY_REFERENCES", str(tmp_path))
    _write(tmp_path, "azure-hb", f'title = "my own HB"\n{GOOD_POINT}')
    _write(tmp_path, "lab", f'title = "lab baseline"\n{GOOD_POINT}')
    sets = available()
    assert sets["lab"] == (tmp_path / "lab.toml", False)
    assert load("azure-hb").title == "my own HB" and not load("azure-hb").builtin
    monkeypatch.delenv("ASSAY_REFERENCES")
    monkeypatch.setenv("ASSAY_CONFIG", str(tmp_path / "conf" / "config.toml"))
    _write(tmp_path / "conf" / "references", "beside-config", f'title = "b"\n{GOOD_POINT}')
    assert "beside-config" in available()


def test_cli_lists_shows_and_refuses_unknown_sets(assay_home: Path, tmp_path: Path):
    env = {"ASSAY_REFERENCES": str(tmp_path / "refs")}
    _write(tmp_path / "refs", "bad", 'title = "t"\n[[point]]\nmetric = "x.y"\n')
    # Markdown: the terminal's table wraps a long cell (the bad file's path and error) at any
    # character, so a longer temporary path (pytest-xdist's) cut "bad.toml" in two there
    listing = run_cli("references", "-f", "md", home=assay_home, env=env, check=True).stdout
    for name in BUILTIN:
        assert name in listing
    assert "unreadable" in listing and "bad.toml" in listing  # one bad file hides nothing
    terminal = run_cli("references", home=assay_home, env=env, check=True).stdout
    assert "unreadable" in terminal and all(name in terminal for name in BUILTIN)
    shown = run_cli("references", "azure-hc", "-f", "md", home=assay_home, env=env, check=True)
    assert "~190 GB/s (Intel MLC AVX-512)" in shown.stdout
    assert (
        "| p2p.latency | mpi=mvapich, nodes=2, size=2 B | MVAPICH2 2.3 | 2.08 us |" in shown.stdout
    )
    assert "| 11290.92 MB/s |" in shown.stdout  # as printed, not rounded
    assert "outside min..max" in shown.stdout
    missing = run_cli("references", "azure-hx", home=assay_home, env=env)
    assert missing.returncode == 3 and "no reference set 'azure-hx'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_math_of_canonical_values_is_finite():
    for name in BUILTIN:
        for p in load(name).points:
            assert math.isfinite(p.value) and p.value > 0


DAMAGED_SETS = {
    "value = inf": ('value = inf\nunit = "us"', "point.0.value: Input should be a finite number"),
    "high = inf": ('high = inf\nunit = "us"', "point.0.high: Input should be a finite number"),
    "nan stat": ('value = 2\nunit = "us"\nstats = { mean = nan }', "finite number"),
    "a 5,000-digit n": (
        'value = 2\nunit = "us"\nstats = { n = ' + "9" * 5000 + " }",
        "not valid TOML: a number too long to read",
    ),
    "inf once in SI": ('value = 1e300\nunit = "GB/s"', "not a figure any machine measures"),
}


@pytest.mark.parametrize("form", list(DAMAGED_SETS))
def test_a_figure_no_machine_measures_is_refused(tmp_path: Path, form: str):
    """``inf`` is TOML: it was accepted as a published figure (and compared against); an
    integer over 4,300 digits was a ValueError traceback out of tomllib."""
    from assay.references.loader import ReferenceError, load_file

    body, words = DAMAGED_SETS[form]
    metric = "memory.triad" if "GB/s" in body else "p2p.latency"
    path = tmp_path / "bad.toml"
    head = f'title = "t"\n[[point]]\nmetric = "{metric}"\nparams = {{ size = 8 }}\n'
    path.write_text(f"{head}{body}\n")
    with pytest.raises(ReferenceError, match=re.escape(words)):
        load_file(path)


def test_a_baseline_naming_a_blank_mpi_is_refused(tmp_path: Path):
    """An MPI is named by its first word: a blank one was an IndexError in the node check."""
    from assay.references.loader import ReferenceError, load_file

    path = tmp_path / "base.toml"
    path.write_text('title = "t"\n[node]\nmpis = [" "]\n[[point]]\nmetric = "p2p.latency"\n'
                    'params = { size = 8 }\nvalue = 2\nunit = "us"\n')  # fmt: skip
    with pytest.raises(ReferenceError, match=r"node\.mpis\.0"):
        load_file(path)


def test_a_large_set_loads_in_linear_time(tmp_path: Path):
    """The line of each point was found by reading the whole file again: a 1.15 MB set of
    11,700 points took 155 s (a HealthCheckProgram has 60); 40,000 table rows were worse."""
    import time

    from assay.references.loader import load_file

    point = '[[point]]\nmetric = "memory.triad"\nparams = {{ scope = "node", i = {i} }}\n'
    points = "".join(
        point.format(i=i) + f'value = {100 + i % 7}\nunit = "GB/s"\n\n' for i in range(11_700)
    )
    rows = "\n".join(f"  [{2 ** (i % 20)}, {i}, 1.5]," for i in range(20_000))
    (tmp_path / "big.toml").write_text(f'title = "t"\n{points}')
    (tmp_path / "rows.toml").write_text(f'title = "t"\n[[table]]\nmetric = "p2p.latency"\n'
                                        f'unit = "us"\ncolumns = ["size", "i", "median"]\n'
                                        f'value = "median"\nrows = [\n{rows}\n]\n')  # fmt: skip
    assert (tmp_path / "big.toml").stat().st_size > 1_100_000
    started = time.perf_counter()
    assert len(load_file(tmp_path / "big.toml").points) == 11_700
    assert len(load_file(tmp_path / "rows.toml").points) == 20_000
    assert time.perf_counter() - started < 30  # about 3 s here, loaded; 155 s and more before


IMPOSSIBLE_STATS = {
    "n = 0": ("stats = { n = 0, mean = 2 }", "point.0.stats: stats n = 0: a statistic is over"),
    "n < 1": ("stats = { n = -3 }", "point.0.stats: stats n = -3: a statistic is over"),
    "n = 2.5": ("stats = { n = 2.5 }", "point.0.stats: stats n = 2.5: a statistic is over"),
    "min above max": ("stats = { n = 5, min = 3, max = 1 }", "min 3 is above max 1 us"),
    "a spread of one": ("stats = { n = 1, min = 1, max = 3 }", "one measurement has no spread"),
    "stddev of one": ("stats = { n = 1, stddev = 0.5 }", "one measurement has no spread"),
    "negative stddev": ("stats = { n = 4, stddev = -1 }", "stddev -1 us is negative"),
    "stddev beyond the range": (
        "stats = { n = 4, min = 1.9, max = 2.1, stddev = 5 }",
        "stddev 5 us is more than 4 values within 1.9..2.1 us can have",
    ),
}


@pytest.mark.parametrize("form", list(IMPOSSIBLE_STATS))
def test_a_count_or_spread_no_measurements_have_is_refused(tmp_path: Path, form: str):
    """``stats = { n = 0 }`` (or n < 1, a non-integer n, a spread impossible for its n) was
    accepted and shown as if published; refused, naming the file, the line and the entry."""
    from assay.references.loader import ReferenceError, load_file

    body, words = IMPOSSIBLE_STATS[form]
    path = tmp_path / "bad.toml"
    path.write_text('title = "t"\n[[point]]\nmetric = "p2p.latency"\nparams = { size = 8 }\n'
                    f'value = 2\nunit = "us"\n{body}\n')  # fmt: skip
    with pytest.raises(ReferenceError, match=re.escape(words)) as exc:
        load_file(path)
    assert str(exc.value).startswith(f"{path}:2: field point.0.stats: ")


def test_a_table_row_with_an_impossible_count_is_refused(tmp_path: Path):
    from assay.references.loader import ReferenceError, load_file

    path = tmp_path / "bad.toml"
    path.write_text('title = "t"\n[[table]]\nmetric = "p2p.latency"\nunit = "us"\n'
                    'columns = ["size", "n", "mean"]\nvalue = "mean"\n'
                    "rows = [\n  [8, 10, 2.0],\n  [16, 0, 2.5],\n]\n")  # fmt: skip
    with pytest.raises(ReferenceError, match=r"bad\.toml:9: field table\.0\.rows\.1: stats n = 0"):
        load_file(path)
    ok = tmp_path / "ok.toml"
    ok.write_text('title = "t"\n[[point]]\nmetric = "p2p.latency"\nparams = { size = 8 }\n'
                  'value = 2\nunit = "us"\n'
                  "stats = { n = 2, min = 1, max = 3, stddev = 1.41 }\n")  # fmt: skip
    assert load_file(ok).points[0].stats.n == 2  # the largest spread two values can have
