"""Runs a training script on N local processes, each with its own ``TF_CONFIG``, and
supervises them.

    python -m mylib.distribute.launch --num_workers 2 examples/train_digits.py \\
        --strategy multi_worker

Every task listens on 127.0.0.1 only. Output lines are prefixed with the task
(``[worker 1]``). If a task fails (JAX's coordination service aborts the survivors of a
lost peer with exit status 134), the launcher names the task that failed first and
how, stops the others after `--grace` seconds, and exits with status 1. On several
machines, set ``TF_CONFIG`` on each yourself and run the script directly (README).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def tf_configs(num_workers, ports):
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    return [{"cluster": cluster, "task": {"type": "worker", "index": i}}
            for i in range(num_workers)]


def describe_exit(code):
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    if code == 134:
        return "exit status 134 (aborted: JAX's coordination service lost a peer)"
    return f"exit status {code}"


def _pump(stream, prefix, out):
    for line in iter(stream.readline, ""):
        out.write(f"{prefix} {line}")
        out.flush()
    stream.close()


def launch(script_args, num_workers=2, timeout=None, grace=5.0, env=None, out=None):
    """Starts `num_workers` processes running `script_args` (a list: the script and its
    arguments) and waits for them. Returns 0 when all exit 0; else 1, after printing
    which task failed first."""
    out = out or sys.stdout
    ports = free_ports(num_workers)
    procs = []
    for i, cfg in enumerate(tf_configs(num_workers, ports)):
        e = dict(os.environ if env is None else env)
        e["TF_CONFIG"] = json.dumps(cfg)
        e["PYTHONUNBUFFERED"] = "1"
        p = subprocess.Popen([sys.executable, *script_args], env=e, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=_pump, args=(p.stdout, f"[worker {i}]", out),
                         daemon=True).start()
        procs.append(p)
    start = time.monotonic()
    first_failure = None
    try:
        while True:
            codes = [p.poll() for p in procs]
            for i, c in enumerate(codes):
                if c not in (None, 0) and first_failure is None:
                    first_failure = (i, c)
            if all(c is not None for c in codes):
                break
            if first_failure is not None:
                deadline = time.monotonic() + grace
                while time.monotonic() < deadline and any(p.poll() is None for p in procs):
                    time.sleep(0.1)
                break
            if timeout is not None and time.monotonic() - start > timeout:
                out.write(f"[launch] timed out after {timeout:.0f} s; stopping all tasks\n")
                first_failure = first_failure or (-1, None)
                break
            time.sleep(0.1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if first_failure is None:
        return 0
    i, c = first_failure
    if i >= 0:
        out.write(f"[launch] worker {i} failed first: {describe_exit(c)}; the other tasks "
                  f"were stopped ({', '.join(f'worker {j}: {describe_exit(p.returncode)}' for j, p in enumerate(procs) if j != i)})\n")
    out.flush()
    return 1


def main(argv=None):
    p = argparse.ArgumentParser(description="Run a script on N local processes with TF_CONFIG.")
    p.add_argument("--num_workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=None, help="seconds for the whole job")
    p.add_argument("--grace", type=float, default=5.0,
                   help="seconds the other tasks get after one fails")
    p.add_argument("script", help="the training script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    a = p.parse_args(argv)
    if a.num_workers < 1:
        p.error("--num_workers must be at least 1")
    return launch([a.script, *a.args], a.num_workers, a.timeout, a.grace)


if __name__ == "__main__":
    sys.exit(main())
