"""A reader's child process, bounded: the programs and parsers that read untrusted files out of
process (LibreOffice for legacy Office files, docutils for reStructuredText) run in a process group
of their own, under an address-space limit, and are killed whole when they run past their time."""

from __future__ import annotations

import os
import signal
import subprocess


def limited(command: list[str], memory_bytes: int) -> list[str]:
    """`command` under an address-space limit set by the shell that starts it (ulimit -v, in KiB)
    and inherited by everything it runs: a preexec_fn could deadlock in a threaded web worker."""
    return ["/bin/sh", "-c", 'ulimit -v "$0" && exec "$@"', str(memory_bytes // 1024), *command]


def run_within(
    command: list[str], *, timeout: float, env: dict[str, str], data: bytes | None = None, merge_errors: bool = False
) -> tuple[int, bytes, bytes] | None:
    """(exit status, stdout, stderr) of `command` fed `data`, or None when it ran past `timeout`:
    then its whole process group (a program's own children too) is killed. `merge_errors` reads
    stderr into stdout."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_errors else subprocess.PIPE,
        start_new_session=True,  # its own process group: a timeout kills everything it started
        env=env,
    )
    try:
        output, errors = process.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return None
    finally:
        if process.poll() is None:  # an exception of our own while it ran
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode, output, errors or b""
