"""Hosts of a multi-client fio run, and their job files (issue 5, "Multi-client").

Hosts are written as fio's connect string ``ADDR`` or ``ADDR,PORT`` (port 8765 by default, fio's
``FIO_NET_PORT``), in a list or a hostfile (one per line, ``#`` starts a comment). A loopback
address (127.0.0.0/8, ``::1``, ``localhost``) is *local* (its server is started here), any other
host *remote* (started through ssh; ``assay.drivers.fio.clients``). Every host needs its own
address: fio names a host's entries by address only, so two servers on one address (different
ports) could not be told apart in the output.

Files. All hosts get the same workload, but each host's job file names assay's files for that
host (``assay-fio-<host>-<n>``) and sets ``unique_filename=0``: on a shared file system (or on
this machine, for loopback hosts) the hosts never share a file, and the names still start with
``assay-fio-`` so the safety rules and the clean-up know them. (fio would otherwise prefix the
client's address itself -- man page, ``unique_filename`` -- under a name assay does not know.)

Names. A host is an IPv4 or IPv6 address (a scope allowed when it is an interface name or
index, ``%eth0``, ``%2``) or a host name
as RFC 1123 writes one (labels of letters, digits, ``-`` and ``_``, none starting or ending
with ``-``, 63 characters at most, 253 in all): nothing else reaches ssh or fio. A host
starting with ``-`` would reach ssh as an option (``-oProxyCommand=...`` runs a command here);
``assay.drivers.fio.clients`` also ends ssh's options with ``--`` before the host.

Pure, except ``read_hostfile``, which reads the file it is given.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from assay.errors import AssayError
from assay.fio.job import FioJob
from assay.fio.workloads import FILE_PREFIX
from assay.inputfile import MAX_TEXT_BYTES, read_bounded

DEFAULT_PORT = 8765  # fio's FIO_NET_PORT (server.h)


class ClientError(AssayError):
    """A server that could not be started, or a bad host list."""


# ------------------------------------------------------------------------------ hosts


@dataclass(frozen=True)
class Host:
    """One fio server: where it listens and how the client reaches it."""

    address: str
    port: int = DEFAULT_PORT

    @property
    def ipv6(self) -> bool:
        return ":" in self.address

    @property
    def connect(self) -> str:
        """fio's connect string, the same for ``--server`` and ``--client`` (man page)."""
        return f"{'ip6' if self.ipv6 else 'ip'}:{self.address},{self.port}"

    @property
    def local(self) -> bool:
        return is_loopback(self.address)

    @property
    def tag(self) -> str:
        """The host's part of its file names (addresses are distinct, see the docstring)."""
        return "".join(c if c.isalnum() or c in ".-" else "-" for c in self.address)

    def __str__(self) -> str:
        return f"{self.address},{self.port}"


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?", re.ASCII)


# An IPv6 scope: an interface name as Linux allows one (at most 15 bytes, IFNAMSIZ - 1) in the
# characters real ones use, or an interface index. ``ipaddress`` takes any text after ``%``
# (``fe80::1%$(id)``), which then reached ssh and the remote shell (issue 28).
_SCOPE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}", re.ASCII)


def _scope_problem(address: str) -> str | None:
    """Why the scope of an IPv6 ``ADDR%SCOPE`` is not an interface name or index, or None."""
    scope = address.partition("%")[2]
    if _SCOPE.fullmatch(scope) and scope.strip(".") == scope.lstrip("."):
        return None
    return (
        f"the IPv6 scope {scope!r} is not an interface name (letters, digits, '_', '.', '-', "
        "at most 15) nor an index"
    )


def host_name_problem(address: str) -> str | None:
    """Why ``address`` is neither an IP address nor a host name (see the docstring), or None."""
    try:
        ipaddress.ip_address(address)
        return _scope_problem(address) if "%" in address else None
    except ValueError:
        pass
    name = address[:-1] if address.endswith(".") else address  # a fully qualified "node7."
    labels = name.split(".")
    if all(label.isdigit() for label in labels):
        return "all digits, but not an IPv4 address"
    if ":" in name:
        return "it has a ':', but is not an IPv6 address"
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return (
            "a host name is letters, digits, '-' and '_' in dot-separated labels of at most "
            "63 characters, none starting or ending with '-'"
        )
    return None


def parse_host(text: str) -> Host:
    """``ADDR`` or ``ADDR,PORT`` (fio's own syntax; a comma, since IPv6 addresses have colons)."""
    value = text.strip()
    address, sep, port_text = value.rpartition(",")
    if not sep:
        address, port_text = value, ""
    for prefix in ("ip6:", "ip4:", "ip:"):  # fio's optional type prefix
        address = address.removeprefix(prefix)
    if not address or any(c.isspace() for c in address) or "/" in address:
        raise ClientError(f"host {text!r}: expected ADDR or ADDR,PORT (fio's connect string)")
    problem = host_name_problem(address)
    if problem:
        raise ClientError(
            f"host {text!r}: {address!r} is not a host name nor an IP address ({problem}); refused"
        )
    port = DEFAULT_PORT
    if port_text:
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise ClientError(f"host {text!r}: port {port_text!r} is not 1..65535")
        port = int(port_text)
    return Host(address, port)


def parse_hosts(texts: Iterable[str]) -> list[Host]:
    """Hosts from their strings; the same address twice is refused (see the docstring)."""
    hosts = [parse_host(t) for t in texts]
    seen: dict[str, Host] = {}
    for host in hosts:
        if host.address in seen:
            raise ClientError(
                f"host {host.address} is given twice ({seen[host.address]} and {host}): fio "
                "reports each host's results by address only",
                hint="use another loopback address for a second local server (127.0.0.2, ...)",
            )
        seen[host.address] = host
    return hosts


def read_hostfile(path: str | os.PathLike[str]) -> list[str]:
    """The host strings of a hostfile: one per line, blank lines and ``#`` comments skipped."""
    try:
        text = read_bounded(path, MAX_TEXT_BYTES, "hostfile").decode(errors="replace")
    except OSError as exc:
        raise ClientError(f"hostfile {path}: cannot read: {exc.strerror}") from None
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [line for line in lines if line]


# ------------------------------------------------------------------------------ job files


def host_format(filename_format: str, host: Host) -> str:
    """``assay-fio-$jobnum`` -> ``assay-fio-<host>-$jobnum``: assay's files, one set per host."""
    if not filename_format.startswith(FILE_PREFIX):
        return filename_format
    return f"{FILE_PREFIX}{host.tag}-{filename_format[len(FILE_PREFIX) :]}"


def for_host(job: FioJob, host: Host) -> FioJob:
    """``job`` as ``host`` runs it: its own files, and no address prefix added by fio."""
    extra = dict(job.extra)
    if "filename_format" in extra:
        extra["filename_format"] = host_format(extra["filename_format"], host)
    extra["unique_filename"] = "0"
    return dataclasses.replace(job, extra=extra)
