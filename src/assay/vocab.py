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

# ``assay import --format``: each format and what it reads, one line each (the help lists
# them; assay.parsers.FORMATS maps the same names to their parsers: a test keeps them equal).
IMPORT_FORMATS = {
    "osu": "OSU Micro-Benchmarks 3.x-7.x text (osu_latency, osu_bw, collectives, -d cuda)",
    "imb": "Intel MPI Benchmarks (IMB-MPI1) text: PingPong, Sendrecv, collectives",
    "perftest": "perftest text (ib_send_lat, ib_write_bw, ...): RDMA latency and bandwidth",
    "nccl": "nccl-tests / rccl-tests text (all_reduce_perf, ...): algbw, busbw, time",
    "stream": "McCalpin's STREAM 5.x text: Copy, Scale, Add, Triad",
    "hpl": "HPL (xhpl) text: Gflops of each test that passed its residual check",
    "hpcc": "HPC Challenge hpccoutf.txt: HPL, DGEMM, STREAM, PTRANS, RandomAccess, FFT, rings",
    "fio": "fio 3.x --output-format=json or json+ (local and --client): IOPS, bandwidth, latency",
    "vdbench": "Vdbench summary.html, totals.html or console: I/O rate, MB/s, response time",
    "ior": "IOR 3.x/4.x text or JSON (-O summaryFormat=JSON): bandwidth and IOPS",
    "mdtest": "mdtest (IOR's 3.x/4.x, LLNL 1.9) SUMMARY rate table: metadata operations/s",
    "gpu-burn": "gpu_burn output: sustained GEMM rate per GPU (a faulty GPU gives none)",
    "assay-json": "assay's own JSON report (assay report -f json), read back",
}
