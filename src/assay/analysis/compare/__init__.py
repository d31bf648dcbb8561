"""Figures against figures: a run against a run (``verdict``, the one compare engine), against
published reference points (``refcompare``), the best of a row when it is more than noise
(``significant_best``) and the best of several runs (``bestof``). Imports ``statistics`` and
``derived``."""
