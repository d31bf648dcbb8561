"""Memory levels from a measured latency ladder (assay.analysis.derived.levels)."""

from __future__ import annotations

import pytest

from assay.analysis.derived.levels import (
    LadderPoint,
    merge_close,
    read_levels,
    reading_notes,
    segment,
)
from assay.analysis.statistics.stats import Figure
from assay.model import Sample
from assay.report.memory import latency_ladder_table

KiB, MiB = 2**10, 2**20
CACHES = {"L1": 32 * KiB, "L2": 1 * MiB, "L3": 32 * MiB}


def size_level(ws: int, caches: dict[str, int] = CACHES) -> str:
    """memlat's label by size (probes.memlat.level_of), restated for these caches."""
    return next((name for name, size in caches.items() if ws <= size), "DRAM")


def ladder(pairs: list[tuple[int, float]], caches: dict[str, int] = CACHES) -> list[LadderPoint]:
    return [LadderPoint(ws, ns * 1e-9, size_level(ws, caches)) for ws, ns in pairs]


# A textbook ladder: four flat levels, one point on each transition.
CLEAN = [
    (4 * KiB, 1.2), (8 * KiB, 1.21), (16 * KiB, 1.2), (32 * KiB, 1.25),
    (64 * KiB, 4.1), (128 * KiB, 4.2), (256 * KiB, 4.3), (512 * KiB, 4.4),
    (1 * MiB, 8.0),
    (2 * MiB, 14.0), (4 * MiB, 15.0), (8 * MiB, 16.0), (16 * MiB, 18.0),
    (32 * MiB, 40.0),
    (64 * MiB, 85.0), (128 * MiB, 95.0), (256 * MiB, 105.0), (512 * MiB, 110.0),
]  # fmt: skip

# Measured here: memlat pinned to CPU 0 of this 2-core AMD EPYC VM (sysfs: L1d 32 KiB,
# L2 1 MiB, L3 32 MiB), --max-bytes 256M --min-time 0.05 --repeats 3, while other jobs ran.
# No L3 plateau shows: from 2 MiB on the sets sized for the L3 run at DRAM latency.
VM = [
    (4096, 3.951), (5760, 4.045), (8192, 3.930), (11584, 3.842), (16384, 4.508),
    (23168, 4.361), (32768, 4.725), (46336, 14.078), (65536, 16.896), (92672, 28.442),
    (131072, 42.253), (185344, 23.780), (262144, 26.338), (370688, 29.310), (524288, 37.989),
    (741440, 64.756), (1048576, 111.812), (1482880, 210.094), (2097152, 452.484),
    (2965760, 549.351), (4194304, 685.198), (5931584, 786.478), (8388608, 805.012),
    (11863232, 845.944), (16777216, 856.803), (23726528, 854.258), (33554432, 906.529),
    (47453120, 951.975), (67108864, 842.728), (94906240, 1013.754), (134217728, 1311.247),
    (189812480, 1467.223), (268435456, 941.758),
]  # fmt: skip


def test_a_clean_ladder_has_the_levels_its_sizes_expect():
    reading = read_levels(ladder(CLEAN))
    assert [(p.name, p.first_bytes, p.last_bytes, p.points) for p in reading.plateaus] == [
        ("L1", 4 * KiB, 32 * KiB, 4),
        ("L2", 64 * KiB, 512 * KiB, 4),
        ("L3", 2 * MiB, 16 * MiB, 4),
        ("DRAM", 64 * MiB, 512 * MiB, 4),
    ]
    assert reading.plateaus[1].latency == pytest.approx(4.25e-9)  # the median of the level
    assert reading.transitions == [1 * MiB, 32 * MiB]
    assert reading.disagreements == [] and reading.note is None


def test_a_set_sized_for_the_l3_that_runs_at_dram_latency_is_called_out():
    # issue 13: "a 4 MiB set at 228 ns is labelled L3"; here the L3 reported is 32 MiB but
    # only 2 MiB of it behaves as a cache (a VM's slice of the host's L3, say).
    pairs = [*CLEAN[:9], (2 * MiB, 15.0), (3 * MiB, 16.0)]
    pairs += [(4 * MiB, 228.0), (8 * MiB, 230.0), (16 * MiB, 233.0), (64 * MiB, 240.0)]
    reading = read_levels(ladder(pairs))
    assert [p.name for p in reading.plateaus] == ["L1", "L2", "L3", "DRAM"]
    assert [d.describe() for d in reading.disagreements] == [
        "4 MiB at 228.0 ns: sized for L3, measures as DRAM",
        "8 MiB at 230.0 ns: sized for L3, measures as DRAM",
        "16 MiB at 233.0 ns: sized for L3, measures as DRAM",
    ]


def test_the_noisy_vm_ladder_reads_without_an_l3():
    reading = read_levels(ladder(VM))
    assert reading.plateaus[0].name == "L1" and reading.plateaus[0].last_bytes == 32 * KiB
    dram = reading.plateaus[-1]
    assert dram.name == "DRAM" and dram.first_bytes == 2 * MiB and dram.points == 15
    said = {d.working_set: d for d in reading.disagreements}
    for ws in (2097152, 4194304, 23726528):
        assert said[ws].size_level == "L3" and said[ws].measured_level == "DRAM"
    assert said[33554432].size_level == "L3"  # exactly the L3's size fits it, by the sizes
    # the 92-512 KiB sets (sized for the 1 MiB L2) form a second, slower plateau on this VM
    assert said[262144].measured_level == "L3"
    assert reading.note is None


def test_fewer_levels_than_sizes_expect_keep_the_ends_and_say_so():
    # no distinct L3: L1, L2 then straight to DRAM
    pairs = [*CLEAN[:8], (1 * MiB, 40.0), (2 * MiB, 90.0), (8 * MiB, 95.0), (64 * MiB, 100.0)]
    reading = read_levels(ladder(pairs))
    assert [p.name for p in reading.plateaus] == ["L1", "L2 or L3", "DRAM"]
    assert reading.note == (
        "the latency curve shows 3 level(s) where the cache sizes expect 4 (L1, L2, L3, DRAM)"
    )
    assert [(d.working_set, d.measured_level) for d in reading.disagreements] == [
        (2 * MiB, "DRAM"),
        (8 * MiB, "DRAM"),
    ]


def test_unknown_sizes_are_never_judged():
    reading = read_levels([LadderPoint(ws, ns * 1e-9, "?") for ws, ns in CLEAN])
    assert [p.name for p in reading.plateaus] == ["level 1", "level 2", "level 3", "level 4"]
    assert reading.disagreements == []
    assert "expect 0 (none known)" in (reading.note or "")
    assert read_levels([]).plateaus == []


def test_segment_cuts_on_a_jump_or_a_drift_and_never_on_a_step_down():
    assert segment([1.0, 1.1, 1.0, 3.0, 3.2]) == [range(0, 3), range(3, 5)]
    # no step reaches 1.6x, but the run drifts past 2.5x its fastest point
    assert segment([1.0, 1.4, 1.9, 2.6, 3.0]) == [range(0, 3), range(3, 5)]
    assert segment([5.0, 2.0, 2.1]) == [range(0, 3)]  # faster after slower: noise
    with pytest.raises(ValueError, match="not a positive number"):
        segment([1.0, 0.0])


def test_merge_close_joins_halves_of_one_level():
    latencies = [1.0, 1.0, 9.0, 1.1, 1.2, 50.0, 52.0]
    runs = [range(0, 2), range(2, 3), range(3, 5), range(5, 7)]
    assert merge_close(latencies, runs) == runs  # 9 between two 1s: a real outlier stays
    assert merge_close([1.0, 1.0, 1.2, 1.3], [range(0, 2), range(2, 4)]) == [range(0, 4)]


def test_the_latency_table_says_where_size_and_measurement_disagree():
    """issue 13: the ladder labelled a 4 MiB set at 228 ns "L3" with no word of doubt."""
    pairs = [*CLEAN[:9], (2 * MiB, 15.0), (3 * MiB, 16.0)]
    pairs += [(4 * MiB, 228.0), (8 * MiB, 230.0), (16 * MiB, 233.0), (64 * MiB, 240.0)]
    figures = [
        Figure(
            Sample.make(
                "memlat", "memory.latency", p.latency,
                {"working_set_bytes": p.working_set, "level": p.size_level, "cpu": 0},
            ),
            1,
            None,
        )
        for p in ladder(pairs)
    ]  # fmt: skip
    table = latency_ladder_table(figures)
    assert table is not None
    level = table.columns.index("Level")
    assert [r[level] for r in table.rows if r[0] == "4 MiB"] == ["L3"]  # the size label stays
    assert table.notes[1] == (
        "cpu 0: levels measured from the curve: L1 4 KiB-32 KiB 1.2 ns, "
        "L2 64 KiB-512 KiB 4.2 ns, L3 2 MiB-3 MiB 15.5 ns, DRAM 4 MiB-64 MiB 231.5 ns"
    )
    assert table.notes[2].startswith(
        "cpu 0: size and measurement disagree: 4 MiB at 228.0 ns: sized for L3, measures as DRAM;"
    )


def test_reading_notes_are_empty_without_points():
    assert reading_notes(read_levels([]), "cpu 0") == []
