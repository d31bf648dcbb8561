"""The derive stage: pure functions from stored samples to derived figures.

One module per problem, each formula documented in the function that implements it:

- ``stats``: folding repetitions, nearest-rank percentiles;
- ``robust``: Huber IRLS line fits on relative residuals;
- ``protocol``: the eager → rendezvous step of a latency curve;
- ``hockney``: t(n) = α + n/β, n½ = α·β;
- ``queueing``: Little's law, L = λ·W, and the threads a target IOPS needs;
- ``knee``: the knee of a response-time curve (Kneedle, slope);
- ``domains``: per-domain bandwidth summary and the slow domain;
- ``series``: which MPI / device a figure belongs to;
- ``verdict``: the one compare engine — a run against a run (identity keys, tolerance bands,
  direction-aware verdicts); ``refcompare``: against published reference points;
- ``significance``: Mann–Whitney U and Welch's t; ``bestof``: best-of and workload summaries;
- ``changepoint``: change points of a history (E-divisive);
- ``outliers``: the robust z-score rule (and ``select``: exact order statistics of a large
  array without copying it); ``allpairs``: an all-pairs matrix analysed (``linkmatrix`` the
  matrix type, on ``assay.condensed``'s layout; ``matrixstats`` node medians, quantiles, worst
  links and block medians, ``confirm`` retests, ``topology`` switches and slow uplinks,
  ``heat`` its heatmap cells; ``perpair`` the matrices of runs made before the probe);
- ``shared_memory``: an inter-node latency below what any network gives is shared memory,
  not a link;
- ``derive``: the one named step computing the derived figures reports and comparisons read.
"""
