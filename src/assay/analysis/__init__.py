"""The derive stage: pure functions from stored samples to derived figures.

One module per problem, each formula documented in the function that implements it, in five
rooms by concern. A room imports only from rooms before it
(``tests/architecture/test_architecture.py`` holds the order): statistics ← derived ←
compare, statistics ← derived ← matrix, and check after both.

- ``statistics``: the maths any figure may need — folding repetitions (``stats``), robust line
  fits (``robust``), significance tests, change points, the robust z-score outlier rule, how a
  figure varied (``spread``);
- ``derived``: figures computed from figures — Hockney, the protocol switch, knees, memory
  levels, STREAM domains, Little's law, storage points, shared memory, per-node outliers, why a
  figure is low, which series a figure belongs to — and ``derive``, the one named step that
  computes the derived figures reports and comparisons read;
- ``compare``: a run against a run (``verdict``, the one compare engine), against published
  points (``refcompare``), the best of a row or of runs (``significant_best``, ``bestof``);
- ``matrix``: the all-pairs link matrix (``linkmatrix`` on ``assay.condensed``'s layout) and its
  analysis (``allpairs``: node medians, outliers, retests, switches, heatmap cells; ``perpair``
  the matrices of runs made before the probe);
- ``check``: ``assay check``'s verdicts — limits, node types, node and link grades, the run's
  whole verdict.
"""
