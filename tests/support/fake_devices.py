"""Runs a Python script in a subprocess that sees 8 fake CPU devices.

XLA reads --xla_force_host_platform_device_count when JAX initializes, so tests that need a
multi-device mesh run their check in a fresh interpreter; the script prints one line
`RESULT <json>` with its findings, which is returned parsed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def run_with_8_cpu_devices(script: str, timeout: float = 300) -> dict:
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                        " --xla_force_host_platform_device_count=8").strip()
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    line = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])
