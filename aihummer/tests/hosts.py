"""Several hosts on one machine, for the multi-host test and `bench/multihost.py`.

`NamespaceHosts` makes each host a network namespace (`ip netns`) with a veth pair to a
bridge of its own, on a subnet only they use: a database host running a throw-away
PostgreSQL cluster and Redis, and any number of app hosts. Traffic goes only to the
addresses of those namespaces. `LoopbackHosts` is the same shape on 127.0.0.1, with the
test's own database and Redis, for machines that refuse namespaces.

Everything made is removed by `close()`, processes first (by the process groups this
module started, and the pids `ip netns pids` names inside its own namespaces).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql")
DB_PORT = 5432
REDIS_PORT = 6379


def namespaces_refused() -> str | None:
    """Why this machine will not make network namespaces, or None when it will."""
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    name = f"ahprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        return f"`ip netns add` was refused: {made.stderr.strip() or made.returncode}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    return None


def _run(*command: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {result.stderr.strip()}")
    return result.stdout


def _pg_bin(tool: str) -> str:
    versions = sorted((path for path in PG_BIN.glob("*/bin") if (path / tool).exists()), key=lambda p: p.parent.name)
    if not versions:
        raise RuntimeError(f"PostgreSQL's {tool} is not installed under {PG_BIN}")
    return str(versions[-1] / tool)


class NamespaceHosts:
    """Hosts `db`, then `add(name)` more, each a namespace on the bridge's subnet."""

    def __init__(self, tag: str, subnet: int) -> None:
        # Interface names are limited to 15 characters: keep the tag short.
        self.tag, self.prefix = tag, f"10.234.{subnet}"
        self.bridge = f"ahb{tag}"
        self.hosts: dict[str, str] = {}  # name -> address
        self.processes: list[subprocess.Popen] = []
        self.pg_dir: Path | None = None
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.prefix}.1/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        self.gateway = f"{self.prefix}.1"  # this process's side: the fake model server listens here

    def netns(self, name: str) -> str:
        return f"ah{self.tag}-{name}"

    def add(self, name: str) -> str:
        """A new host on the bridge; its address."""
        index = len(self.hosts) + 2
        namespace, outside, inside = self.netns(name), f"ah{self.tag}o{index}", f"ah{self.tag}i{index}"
        address = f"{self.prefix}.{index}"
        _run("ip", "netns", "add", namespace)
        _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        _run("ip", "link", "set", inside, "netns", namespace)
        _run("ip", "link", "set", outside, "master", self.bridge)
        _run("ip", "link", "set", outside, "up")
        _run("ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", inside)
        _run("ip", "-n", namespace, "link", "set", inside, "up")
        _run("ip", "-n", namespace, "link", "set", "lo", "up")
        self.hosts[name] = address
        return address

    def start_database(self, *, copy_of: str | None = None) -> tuple[str, str]:
        """A throw-away PostgreSQL cluster and Redis on host `db`: (DATABASE_URL, broker URL).
        `copy_of`: a database URL whose tables and rows the new database starts with."""
        address = self.add("db")
        # initdb refuses root: the cluster belongs to the postgres user, in a directory of its own.
        self.pg_dir = Path(tempfile.mkdtemp(prefix=f"ah{self.tag}-pg-"))
        shutil.chown(self.pg_dir, "postgres", "postgres")
        data = self.pg_dir / "data"
        _run("runuser", "-u", "postgres", "--", _pg_bin("initdb"), "-D", str(data), "-U", "postgres", "-A", "trust")
        (data / "pg_hba.conf").write_text(f"local all all trust\nhost all all {self.prefix}.0/24 trust\n")
        postgres = [
            *("ip", "netns", "exec", self.netns("db"), "runuser", "-u", "postgres", "--", _pg_bin("postgres")),
            *("-D", str(data), "-c", f"listen_addresses={address}", "-c", f"port={DB_PORT}"),
            *("-c", f"unix_socket_directories={self.pg_dir}", "-c", "fsync=off", "-c", "synchronous_commit=off"),
            *("-c", "max_connections=200"),
        ]
        self._start(postgres, self.pg_dir / "postgres.log")
        redis = ["ip", "netns", "exec", self.netns("db"), "redis-server", "--bind", address, "--port", str(REDIS_PORT)]
        # No protected mode: the namespace's subnet is the test's own, and its hosts must reach it.
        self._start([*redis, "--save", "", "--appendonly", "no", "--protected-mode", "no"], self.pg_dir / "redis.log")
        self._wait_for_database(address)
        if copy_of:
            self._copy_database(copy_of, address)
        return f"postgres://postgres@{address}:{DB_PORT}/aihummer", f"redis://{address}:{REDIS_PORT}/0"

    def _copy_database(self, source: str, address: str) -> None:
        """pg_dump of `source` (from this host), restored by psql on host `db`."""
        dump = subprocess.run([_pg_bin("pg_dump"), "--no-owner", source], capture_output=True, check=False)
        if dump.returncode != 0:
            raise RuntimeError(f"pg_dump {source}: {dump.stderr.decode(errors='replace').strip()}")
        psql = ["ip", "netns", "exec", self.netns("db"), _pg_bin("psql"), "-h", address, "-U", "postgres"]
        restore = [*psql, "-q", "-v", "ON_ERROR_STOP=1", "-d", "aihummer"]
        restored = subprocess.run(restore, input=dump.stdout, capture_output=True, check=False)
        if restored.returncode != 0:
            raise RuntimeError(f"psql restore: {restored.stderr.decode(errors='replace').strip()}")

    def _wait_for_database(self, address: str) -> None:
        createdb = ["ip", "netns", "exec", self.netns("db"), _pg_bin("createdb"), "-h", address, "-U", "postgres"]
        deadline = time.monotonic() + 60
        while subprocess.run([*createdb, "aihummer"], capture_output=True, check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("The throw-away PostgreSQL did not answer: " + self.log("postgres"))
            time.sleep(0.3)
        ping = ["ip", "netns", "exec", self.netns("db"), "redis-cli", "-h", address, "-p", str(REDIS_PORT), "ping"]
        while b"PONG" not in subprocess.run(ping, capture_output=True, check=False).stdout:
            if time.monotonic() > deadline:
                raise RuntimeError("The throw-away Redis did not answer: " + self.log("redis"))
            time.sleep(0.2)

    def _start(self, command: list[str], log: Path) -> None:
        with log.open("w") as out:
            self.processes.append(
                subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            )

    def log(self, name: str) -> str:
        path = (self.pg_dir or Path("/nonexistent")) / f"{name}.log"
        return path.read_text()[-2000:] if path.exists() else ""

    def tear_down(self, name: str) -> None:
        """The host is gone: every process in it killed, its namespace and link deleted."""
        namespace = self.netns(name)
        pids = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True, check=False).stdout
        for pid in pids.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)
        self.hosts.pop(name, None)

    def close(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        for name in list(self.hosts):
            self.tear_down(name)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)
        if self.pg_dir is not None:
            shutil.rmtree(self.pg_dir, ignore_errors=True)


class LoopbackHosts:
    """The same shape on 127.0.0.1: every host is this machine, no namespace."""

    gateway = "127.0.0.1"

    def __init__(self, database_url: str, broker_url: str) -> None:
        self.database_url, self.broker_url = database_url, broker_url
        self.hosts: dict[str, str] = {}

    def netns(self, name: str) -> None:
        return None

    def add(self, name: str) -> str:
        self.hosts[name] = "127.0.0.1"
        return "127.0.0.1"

    def start_database(self, *, copy_of: str | None = None) -> tuple[str, str]:
        return self.database_url, self.broker_url  # the test's own: nothing to copy

    def tear_down(self, name: str) -> None:
        self.hosts.pop(name, None)  # the caller kills the host's processes itself

    def close(self) -> None:
        self.hosts.clear()
