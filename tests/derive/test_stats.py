from assay.analysis.statistics.stats import fold_repetitions, nearest_rank, summarize
from assay.model import Sample


def test_summary_and_nearest_rank_percentiles():
    st = summarize(range(1, 1001))
    assert (st.n, st.min, st.max, st.median) == (1000, 1, 1000, 500.5)
    assert st.p99 == 990 and st.p999 == 999  # measured values, not interpolations
    assert nearest_rank([5.0], 99) == 5.0


def test_repetitions_fold_to_their_median_and_spread():
    reps = [
        Sample.make("p2p", "p2p.latency", v, {"size": 8, "mpi": "a", "repetition": i, "p90": v})
        for i, v in enumerate([3e-6, 1e-6, 2e-6], start=1)
    ]
    other = Sample.make("p2p", "p2p.latency", 9e-6, {"size": 16, "mpi": "a", "repetition": 1})
    figs = fold_repetitions([*reps, other])
    assert len(figs) == 2
    fig8 = next(f for f in figs if f.sample.params["size"] == 8)
    assert fig8.repetitions == 3 and fig8.sample.value == 2e-6
    assert fig8.spread.min == 1e-6 and fig8.spread.max == 3e-6
    assert "repetition" not in fig8.sample.params
