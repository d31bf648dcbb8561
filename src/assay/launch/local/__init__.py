"""The local backend: jobs run on this node, one after the other, in assay's own process."""
