"""Statistics any figure may need, knowing nothing of what was measured: folding repetitions
(``stats``), robust line fits (``robust``), Mann–Whitney U and Welch's t (``significance``),
change points of a history (``changepoint``), the robust z-score outlier rule (``outliers``,
with ``select``'s exact order statistics of a large array), how much a figure varied
(``spread``). Imports no other room of ``assay.analysis``."""
