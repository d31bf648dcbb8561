"""Figures computed from figures, one module per problem: Hockney's α and β (``hockney``), the
eager → rendezvous switch (``protocol``), knees of response curves (``knee``), memory levels
(``levels``), STREAM domains (``domains``), Little's law (``queueing``), storage points
(``storage_points``), shared memory that is not a link (``shared_memory``), per-node outliers
(``pernode``), why a figure is low (``whylow``), which series a figure belongs to (``series``);
``derive`` is the one step that computes them. Imports ``statistics`` only."""
