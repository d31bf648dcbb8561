"""Names shared by the stages that make samples and the stages that read them.

A pure vocabulary at the base layer (like :mod:`assay.units`): the report and the derive step
read these names instead of importing the parsers, probes or drivers that write them.
"""

from __future__ import annotations

# STREAM's four kernels, in the order STREAM prints them (metric ``memory.<kernel>``).
STREAM_KERNELS = ("copy", "scale", "add", "triad")

# A STREAM sample's ``scope`` param: the whole node, or one L3 domain / NUMA node.
DOMAIN_SCOPES = ("l3", "numa")

# Probes (and imported tools) whose p2p / collective figures follow the OSU method
# (ping-pong latency, windowed bandwidth, per-rank collective timing). Others (HPCC's
# ping-pong, say) are a different method and are reported apart.
P2P_METHOD = frozenset({"p2p", "osu", "imb"})
COLL_METHOD = frozenset({"coll", "osu", "imb"})

# IMB's PingPong: its bandwidth is n / (half round trip) of one message at a time, not
# osu_bw's window of messages in flight, so it is a method of its own.
IMB_PINGPONG = "PingPong"

# fio: the six standard workloads in table order (the seed pages' Vdbench wd= lines), and the
# name fio gives the total over the hosts of a multi-client run.
STORAGE_WORKLOADS = (
    "randread-8k",
    "randwrite-8k",
    "seqread-64k",
    "seqwrite-64k",
    "seqmix-64k",
    "randmix-8k",
)
ALL_CLIENTS = "All clients"
