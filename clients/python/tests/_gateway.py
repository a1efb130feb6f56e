"""Runs the real `airlock serve` for a test: its own data file and port, restartable.

The binary is `$AIRLOCK_BIN`, or `<repo>/target/debug/airlock` (this file is
`<repo>/clients/python/tests/_gateway.py`).
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
AIRLOCK_BIN = Path(os.environ.get("AIRLOCK_BIN") or REPO / "target" / "debug" / "airlock")

# How long a start may take before the test fails (the first start compiles the core).
START_TIMEOUT_S = 120


def free_port() -> int:
    """A loopback port nothing listens on now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(extra: dict[str, str]) -> dict[str, str]:
    """The test's environment without Airlock or provider settings, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AIRLOCK_") and k not in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY")
    }
    env.update(extra)
    return env


class Gateway:
    """One `airlock serve` on `127.0.0.1:<port>` with its data file in `directory`.

    `start()` returns once the gateway printed that it listens; `kill()` is a SIGKILL; a
    `start()` after it reuses the same port and data file.
    """

    def __init__(self, directory: Path, env: dict[str, str] | None = None) -> None:
        self.directory = directory
        self.data = directory / "airlock.db"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.stderr: list[str] = []
        self._env = _environment(env or {})
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> Gateway:
        command = [
            str(AIRLOCK_BIN),
            "serve",
            "--listen",
            f"127.0.0.1:{self.port}",
            "--data",
            str(self.data),
        ]
        self._process = subprocess.Popen(
            command,
            cwd=self.directory,  # no stray ./airlock.toml is read
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        listening: queue.Queue[str | None] = queue.Queue()
        threading.Thread(
            target=self._read_stderr, args=(self._process, listening), daemon=True
        ).start()
        try:
            line = listening.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            line = None
        if line != f"airlock: listening on {self.url}":
            self.kill()
            raise RuntimeError(f"airlock serve did not start: {''.join(self.stderr)}")
        return self

    def _read_stderr(self, process: subprocess.Popen[str], listening: queue.Queue[str | None]):
        """Keeps the gateway's stderr (for failure messages) and reports the listening line."""
        assert process.stderr is not None
        for line in process.stderr:
            self.stderr.append(line)
            if line.startswith("airlock: listening on "):
                listening.put(line.strip())
        listening.put(None)  # exited before (or after) listening

    def keys_create(self, tenant: str, admin: bool = False) -> str:
        """Makes an API key in the gateway's data file (`airlock keys create`)."""
        command = [str(AIRLOCK_BIN), "keys", "create", "--tenant", tenant, "--data", str(self.data)]
        if admin:
            command.append("--admin")
        done = subprocess.run(
            command, cwd=self.directory, env=self._env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    def kill(self) -> None:
        """Kills the gateway at once (SIGKILL), as a crash would, and reaps it."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
        if self._process is not None:
            self._process.wait()
