import os
import shutil
from pathlib import Path

import pytest

from assay.errors import ConfigError, ToolchainError
from assay.model import Build
from assay.toolchain import build_probe, discover_mpis, identify_launcher, keyed_text, native_source

needs_both = pytest.mark.skipif(
    not (shutil.which("mpicc.openmpi") and shutil.which("mpicc.mpich")),
    reason="apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev",
)


@needs_both
def test_discovers_openmpi_and_mpich_with_versions():
    found = {m.name: m for m in discover_mpis({})}
    assert found["openmpi"].flavor == "openmpi"
    assert found["mpich"].flavor == "mpich"
    assert found["openmpi"].version[0].isdigit() and "." in found["openmpi"].version
    assert found["mpich"].version[0].isdigit()
    assert found["openmpi"].source == "alternatives"
    # the plain mpicc is one of the two through alternatives: not listed a third time
    assert len([m for m in found.values() if m.flavor == "openmpi"]) == 1


@needs_both
def test_config_declares_an_mpi():
    cfg = {
        "mpi": [
            {
                "name": "my-ompi",
                "mpicc": "mpicc.openmpi",
                "launcher": shutil.which("mpirun.openmpi"),
                "launcher_flags": ["--mca", "btl", "self,vader"],
            }
        ]
    }
    found = discover_mpis(cfg)
    mine = next(m for m in found if m.name == "my-ompi")
    assert mine.source == "config" and mine.flavor == "openmpi"
    assert mine.launcher_flags == ["--mca", "btl", "self,vader"]
    with pytest.raises(ConfigError, match=r"\[\[mpi\]\] entry 1: the key 'launcher' is missing"):
        discover_mpis({"mpi": [{"name": "x", "mpicc": "y"}]})


def test_unknown_launcher_is_unknown_not_a_crash(tmp_path: Path):
    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\necho something else\n")
    fake.chmod(0o755)
    assert identify_launcher(str(fake)) == ("unknown", "unknown")
    assert identify_launcher(str(tmp_path / "missing")) == ("unknown", "unknown")


def test_build_is_cached_and_keyed_by_flags(tmp_path: Path):
    build = Build("stream.c", "cc", ("-O2", "-fopenmp"), ("-lm",))
    exe = build_probe(build, [], cache_dir=tmp_path)
    assert exe.exists()
    stamp = exe.stat().st_mtime_ns
    assert build_probe(build, [], cache_dir=tmp_path) == exe
    assert exe.stat().st_mtime_ns == stamp  # not recompiled
    other = build_probe(
        Build("stream.c", "cc", ("-O1", "-fopenmp"), ("-lm",)), [], cache_dir=tmp_path
    )
    assert other != exe and other.exists()


def test_compile_error_shows_the_compilers_message(tmp_path: Path):
    with pytest.raises(ToolchainError) as err:
        build_probe(Build("stream.c", "cc", ("-fno-such-flag-xyz",)), [], cache_dir=tmp_path)
    assert "compiling stream.c" in str(err.value)
    assert "-fno-such-flag-xyz" in str(err.value)  # gcc's own complaint names the flag
    assert not any(tmp_path.rglob(".build-*"))  # no half-built file is left behind


def test_the_cache_key_covers_the_shared_headers(tmp_path: Path):
    """probe.h and jsonl.h are compiled into every probe: editing one must rebuild them."""
    (tmp_path / "x.c").write_text('#include "probe.h"\n')
    (tmp_path / "probe.h").write_text("/* v1 */\n")
    (tmp_path / "jsonl.h").write_text("/* out */\n")
    before = keyed_text(tmp_path / "x.c")
    (tmp_path / "probe.h").write_text("/* v2 */\n")
    assert keyed_text(tmp_path / "x.c") != before
    # moving text from one header to the other is a change too
    (tmp_path / "probe.h").write_text("")
    (tmp_path / "jsonl.h").write_text("/* v2 */\n/* out */\n")
    moved = keyed_text(tmp_path / "x.c")
    (tmp_path / "probe.h").write_text("/* v2 */\n")
    (tmp_path / "jsonl.h").write_text("/* out */\n")
    assert keyed_text(tmp_path / "x.c") != moved
    shipped = keyed_text(native_source("stream.c"))
    assert b"\0probe.h\0" in shipped and b"\0jsonl.h\0" in shipped


def test_a_compiler_that_removed_its_output_still_gives_the_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """gcc deletes its output file when it fails (a full disk, say): the build error must
    still be the compiler's message, not a FileNotFoundError from cleaning up."""
    compiler = tmp_path / "fake-cc"
    compiler.write_text(
        "#!/bin/sh\n"
        'for a; do case "$prev" in -o) rm -f "$a";; esac; prev="$a"; done\n'
        'echo "fake-cc: No space left on device" >&2; exit 1\n'
    )
    compiler.chmod(0o755)
    monkeypatch.setenv("CC", str(compiler))
    with pytest.raises(ToolchainError, match="No space left on device"):
        build_probe(Build("stream.c", "cc", ("-O2",)), [], cache_dir=tmp_path / "cache")


def test_a_cached_probe_that_was_replaced_never_runs(tmp_path: Path):
    """issue 28: the cache key hashes the sources, never the binary; a binary replaced in the
    cache ran on every node. Its digest, recorded at build, is checked before each use."""
    build = Build("stream.c", "cc", ("-O1",), ("-lm",))
    exe = build_probe(build, [], cache_dir=tmp_path)
    assert (exe.parent / f"{exe.name}.sha256").exists()
    exe.write_bytes(b"#!/bin/sh\ntouch pwned\n")  # what another user would plant
    with pytest.raises(ToolchainError, match="not the binary assay built"):
        build_probe(build, [], cache_dir=tmp_path)


def test_a_cache_writable_by_others_is_refused(tmp_path: Path):
    build = Build("stream.c", "cc", ("-O1",), ("-lm",))
    exe = build_probe(build, [], cache_dir=tmp_path / "cache")
    for path in (tmp_path / "cache", exe.parent, exe):
        mode = path.stat().st_mode
        path.chmod(mode | 0o020)
        with pytest.raises(ToolchainError, match="writable by its group or others"):
            build_probe(build, [], cache_dir=tmp_path / "cache")
        path.chmod(mode)
    assert build_probe(build, [], cache_dir=tmp_path / "cache") == exe


def test_a_cache_made_under_a_group_umask_is_not_group_writable(tmp_path: Path):
    old = os.umask(0o002)
    try:
        exe = build_probe(Build("stream.c", "cc", ("-O1",), ("-lm",)), [], cache_dir=tmp_path / "c")
    finally:
        os.umask(old)
    for path in (tmp_path / "c", exe.parent, exe, exe.parent / f"{exe.name}.sha256"):
        assert not path.stat().st_mode & 0o022, path


@pytest.mark.parametrize("planted", ["binary", "digest record"])
def test_a_fifo_planted_in_the_probe_cache_is_refused_not_waited_on(tmp_path: Path, planted):
    """The cached binary and its digest record were read with a plain ``open``: a FIFO put in
    their place (mode 0644, the user's own: the cache's checks let it by) hung every run in
    ``open``. They are read through the one bounded reader (``assay.inputfile``)."""
    import signal

    build = Build("stream.c", "cc", ("-O1",), ("-lm",))
    exe = build_probe(build, [], cache_dir=tmp_path)
    target = exe if planted == "binary" else exe.parent / f"{exe.name}.sha256"
    target.unlink()
    os.mkfifo(target, 0o644)

    def hung(*_):
        raise TimeoutError("the FIFO was opened (it waits for a writer)")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        with pytest.raises(ToolchainError, match=r"probe cache: .*not a regular file"):
            build_probe(build, [], cache_dir=tmp_path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
