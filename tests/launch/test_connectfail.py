"""A job that could not connect is told from one whose partner stopped answering
(assay.launch.connectfail), on the libraries' own words as users pasted them."""

from __future__ import annotations

from assay.launch.connectfail import (
    connect_failures,
    describe,
    kernel_clock,
    neighbour_overflows,
    overflowed,
)
from assay.system.fabric import Run

# open-mpi/ompi issue #10734 (Open MPI 4.1.4, TCP over InfiniBand), as pasted there
OMPI_4_1_4 = """--------------------------------------------------------------------------
WARNING: Open MPI failed to TCP connect to a peer MPI process.  This
should not happen.

Your Open MPI job may now hang or fail.

  Local host: bl2609
  PID:        26165
  Message:    connect() to 9.9.11.33:1048 failed
  Error:      Operation now in progress (115)
--------------------------------------------------------------------------
"""
# jbornschein/mpi4py-examples issue #11 (Raspberry Pi cluster): another errno
OMPI_EAGAIN = """  Local host: pi02
  PID:        24783
  Message:    connect() to 169.254.140.13:1026 failed
  Error:      Resource temporarily unavailable (11)
--------------------------------------------------------------------------
[pi01:28731] 3 more processes have sent help message help-mpi-btl-tcp.txt / client connect fail
"""
# openucx/ucx issue #5438 (UCX's TCP transport, its CI log)
UCX = """[2020-07-19T18:49:31.304Z] [     INFO ] < connect(fd=16, dest_addr=10.209.44.35:48547) failed: Connection refused >
[2020-07-19T18:49:31.304Z] [     INFO ] < try to increase "net.core.somaxconn", "net.core.netdev_max_backlog", "net.ipv4.tcp_max_syn_backlog" to the maximum value on the remote node or increase UCX_TCP_MAX_CONN_RETRIES (=25) >
"""  # noqa: E501
# this project's VM at 32 namespace nodes (issue 27): the kernel's line
DMESG = "[ 8123.456789] neighbour: arp_cache: neighbor table overflow!\n[ 8123.5] eth0: up\n"


def test_the_libraries_words_name_the_peer_and_the_error():
    [a] = connect_failures(OMPI_4_1_4)
    assert (a.library, a.peer, a.error) == (
        "Open MPI",
        "9.9.11.33:1048",
        "Operation now in progress (115)",
    )
    [b] = connect_failures(OMPI_EAGAIN)
    assert b.error == "Resource temporarily unavailable (11)"
    [c] = connect_failures(UCX)
    assert (c.library, c.peer, c.error) == ("UCX", "10.209.44.35:48547", "Connection refused")
    assert connect_failures(OMPI_4_1_4 + OMPI_4_1_4) == [a]  # each once
    assert connect_failures("allpairs: rank 3 (n3): no answer from rank 4 within 2 s") == []


def test_the_likely_cause_is_the_neighbour_table_when_the_kernel_says_so():
    failures = connect_failures(OMPI_4_1_4 + UCX)
    text = describe(failures, neighbour_overflows(DMESG), [])
    assert text.startswith("could not connect: 2 connect(s) failed (Open MPI: to 9.9.11.33")
    assert "neighbour table is full (dmesg: [ 8123.456789] neighbour: arp_cache" in text
    limit = "neighbour table, hard limit (net.ipv4.neigh.default.gc_thresh3) is 1024"
    assert f"likely cause: {limit}" in describe(failures, [], [limit])
    assert "firewall or routing" in describe(failures, [], [])


def test_an_overflow_while_a_job_ran_is_told_from_older_ones_and_named():
    """At 32 namespace nodes on the kernel's default table (1,024 entries) Open MPI retried
    through the overflow and finished: only dmesg's new lines tell that the table was full,
    and the note names it with what the run needs."""
    before = "[ 100.25] neighbour: arp_cache: neighbor table overflow!\n[ 7000.5] eth0: up\n"
    mark = kernel_clock(before)
    assert mark == 7000.5 and kernel_clock("no stamps here\n") == 0.0
    assert neighbour_overflows(before, since=mark) == []
    assert len(neighbour_overflows(before)) == 1  # (no mark: every line, as before)
    now = before + DMESG.replace("8123.456789", "7001.000001")
    [line] = neighbour_overflows(now, since=mark)
    assert line.startswith("[ 7001.000001] neighbour: arp_cache")
    text = overflowed([line], Run(32, shared_kernel=True))
    assert "neighbour table overflowed while it ran (1 line(s) in dmesg: [ 7001.000001]" in text
    assert "a 32-node run (its nodes sharing one kernel) needs 1,056 entries" in text
    assert "sysctl -w net.ipv4.neigh.default.gc_thresh3=4096" in text
    assert "a 32-node run needs 95 entries" in overflowed([line], Run(32))  # a table a node
