"""The all-pairs link matrix: its type (``linkmatrix``, on ``assay.condensed``'s layout), node
medians, quantiles and blocks (``matrixstats``), retests (``confirm``), switches and slow
uplinks (``topology``), heatmap cells (``heat``), the whole analysis (``allpairs``) and the
matrices of runs made before the probe (``perpair``). Imports ``statistics`` and ``derived``."""
