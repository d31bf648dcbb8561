"""Run a server and its client (perftest's way: the same tool, with and without a peer name).

    python -m assay.drivers.pair --server '["ib_send_lat", "-a"]' \\
        --client '["ib_send_lat", "-a", "localhost"]'

The server starts first and gets ``--delay`` seconds to listen; the client's stdout is this
program's stdout (the measurement); both stderrs go to stderr, prefixed. The server is
stopped when the client ends (SIGTERM, then SIGKILL). Exit status: the client's, or 1 when
the server died first. On Slurm both argvs are srun steps on two nodes, the client naming the
server's node (``assay.launch.slurm.steps.pair_argv``); this program runs on the runner's node.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time


def _relay(stream, prefix: str) -> None:
    for line in iter(stream.readline, b""):
        sys.stderr.write(f"{prefix}{line.decode(errors='replace')}")
    stream.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="assay.drivers.pair", description=__doc__)
    ap.add_argument("--server", required=True, help="JSON argv of the server")
    ap.add_argument("--client", required=True, help="JSON argv of the client")
    ap.add_argument("--delay", type=float, default=1.0, help="seconds for the server to listen")
    args = ap.parse_args(argv)
    server_argv, client_argv = json.loads(args.server), json.loads(args.client)
    try:
        server = subprocess.Popen(server_argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as exc:
        print(f"pair: cannot start the server {server_argv[0]}: {exc.strerror}", file=sys.stderr)
        return 2
    relay = threading.Thread(target=_relay, args=(server.stdout, "server: "), daemon=True)
    relay.start()
    time.sleep(args.delay)
    if server.poll() is not None:
        relay.join(timeout=2)
        print(f"pair: the server exited ({server.returncode}) before the client started",
              file=sys.stderr)  # fmt: skip
        return 1
    try:
        client = subprocess.run(client_argv, stdout=sys.stdout, stderr=sys.stderr, check=False)
    except OSError as exc:
        print(f"pair: cannot start the client {client_argv[0]}: {exc.strerror}", file=sys.stderr)
        server.kill()
        return 2
    finally:
        if server.poll() is None:
            try:
                server.wait(timeout=5)  # perftest's server ends by itself after the test
            except subprocess.TimeoutExpired:
                # SIGTERM first: a server started through srun passes it to its task on the
                # other node; SIGKILL would leave that task to Slurm's clean-up
                server.terminate()
                try:
                    server.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    server.kill()
    return client.returncode


if __name__ == "__main__":
    sys.exit(main())
