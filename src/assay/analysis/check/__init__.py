"""``assay check``'s verdicts: its limits (``checklimits``), a node's type and inventory
(``nodetype``), a node's figures graded (``health``), the links of the all-pairs matrices graded
(``healthlinks``) and the whole run's verdict (``checkrun``). The last room: it may import every
other room of ``assay.analysis``."""
