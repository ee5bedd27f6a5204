"""One run over several processes (nar_gap.training.hosts): the seeds' numbers
are those of one process training them all, bit for bit."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from nar_gap.cli import main
from nar_gap.training import hosts

# Two forced CPU devices in every process: the workers shard their 4 seeds
# 2 per device, the reference its 8 seeds 4 per device.  On a CPU each
# device runs its seeds one after another (``lax.map``), and a seed's
# numbers do not depend on how many share its loop -- as long as more than
# one does.  With exactly one, XLA removes the loop (the optimised HLO has
# one ``while`` fewer) and fuses differently: a Bellman-Ford seed scored
# alone differs from itself among others by 1 ulp in some hint accuracies
# along time, and its parameters drift apart in the last bits.  That is
# the difference seen between one seed trained alone and among 32; this
# test keeps every device at two seeds or more, where there is none.
WORKER = textwrap.dedent(
    """
    import json, sys
    import jax, numpy as np
    from nar_gap.model.config import NetworkConfig
    from nar_gap.training import TrainConfig, hosts, train
    from nar_gap.training.devices import seed_sharding

    out, report, steps = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
    config = TrainConfig(
        network=NetworkConfig("bellman_ford", hidden_size=8, num_heads=1),
        seeds=tuple(range(8)), steps=steps[0], batch_size=4, train_lengths=(4,),
        val_num_nodes=4, test_num_nodes=4, eval_every=2, checkpoint_every=2,
        node_buckets=(4,), time_buckets=(8,), shape_buckets=(),
    )
    for count in steps:  # several counts: a resumed run
        config = config.__class__(**{**config.__dict__, "steps": count})
        result = train(config, out, progress=False)
    own = hosts.own_seeds(config.seeds)
    mesh = seed_sharding(len(own)).mesh
    np.savez(report + ".npz", *jax.tree_util.tree_leaves(result.params))
    with open(report + ".json", "w") as handle:
        json.dump({"processes": jax.process_count(), "own": list(own),
                   "mesh_devices": int(mesh.devices.size),
                   "mesh_is_local": all(d.process_index == jax.process_index()
                                        for d in mesh.devices.flat),
                   "seeds": [m["seed"] for m in result.metrics]}, handle)
    """
)
TIMEOUT_S = 600


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "w") as handle:
        return subprocess.Popen(
            [sys.executable, "-c", WORKER, *args],
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )


def _finish(started: list[tuple[subprocess.Popen, Path]]) -> None:
    """Wait for every process; on the first failure kill the rest and show it.

    A process that fails between barriers leaves the others waiting for it
    (until jax.distributed's heartbeats give up, minutes later), and JAX
    catches SIGTERM: hence SIGKILL.
    """
    deadline = time.monotonic() + TIMEOUT_S
    while any(process.poll() is None for process, _ in started):
        failed = [(p, log) for p, log in started if p.poll() not in (None, 0)]
        if failed or time.monotonic() > deadline:
            for process, _ in started:
                process.kill()
            process, log = failed[0] if failed else started[0]
            pytest.fail(log.read_text()[-3000:])
        time.sleep(0.5)
    for process, log in started:
        assert process.returncode == 0, log.read_text()[-3000:]


def _process_env(
    base: dict[str, str], coordinator: str, index: int, count: int
) -> dict[str, str]:
    """``base`` with the variables that make a process ``index`` of ``count``."""
    return {
        **base,
        hosts.COORDINATOR_ENV: coordinator,
        hosts.NUM_PROCESSES_ENV: str(count),
        hosts.PROCESS_ID_ENV: str(index),
    }


def _files(run: Path) -> list[str]:
    names = ["metrics.csv", "validation.csv", "config.json", "initial.json"]
    for seed in range(8):
        names += [
            f"seed_{seed}/{name}"
            for name in ("checkpoint.msgpack", "params.msgpack", "metrics.json")
        ]
    return names


@pytest.mark.slow
def test_two_processes_give_each_seed_one_process_numbers(tmp_path):
    """Two processes train 8 seeds, 4 each (to 2 steps, then resumed to 4),
    beside one process training all 8 straight to 4: every file of every
    seed, the tables and the returned parameters are the same bytes."""
    base = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
    }
    for name in (hosts.COORDINATOR_ENV, hosts.NUM_PROCESSES_ENV, hosts.PROCESS_ID_ENV):
        base.pop(name, None)
    shared, alone = tmp_path / "shared", tmp_path / "alone"
    coordinator = f"localhost:{_free_port()}"
    started = []
    for index in (0, 1):
        env = _process_env(base, coordinator, index, 2)
        report, log = tmp_path / f"process_{index}", tmp_path / f"process_{index}.log"
        started.append((_start([str(shared), str(report), "2", "4"], env, log), log))
    log = tmp_path / "alone.log"
    started.append((_start([str(alone), str(tmp_path / "alone"), "4"], base, log), log))
    _finish(started)

    for name in _files(alone):
        assert (shared / name).read_bytes() == (alone / name).read_bytes(), name
    merged, straight = (
        json.loads((d / "metrics.json").read_text()) for d in (shared, alone)
    )
    assert merged["seeds"] == straight["seeds"]
    reference = np.load(tmp_path / "alone.npz")
    for index in (0, 1):
        report = json.loads((tmp_path / f"process_{index}.json").read_text())
        assert report["processes"] == 2
        assert report["own"] == list(range(4 * index, 4 * index + 4))
        assert report["mesh_devices"] == 2 and report["mesh_is_local"]
        assert report["seeds"] == list(range(8))  # every process returns the run
        returned = np.load(tmp_path / f"process_{index}.npz")
        for key in reference:
            assert np.array_equal(returned[key], reference[key]), key


def test_each_process_owns_one_contiguous_block():
    seeds = tuple(range(10, 17))
    blocks = [hosts.own_seeds(seeds, index, 3) for index in range(3)]
    assert blocks == [(10, 11), (12, 13), (14, 15, 16)]
    assert hosts.own_seeds(seeds, 0, 1) == seeds
    with pytest.raises(hosts.HostsError, match="2 seeds cannot be shared by 3"):
        hosts.own_seeds((0, 1), 0, 3)


def test_hosts_come_from_arguments_else_the_environment():
    env = {
        hosts.COORDINATOR_ENV: "10.0.0.1:1234",
        hosts.NUM_PROCESSES_ENV: "4",
        hosts.PROCESS_ID_ENV: "3",
    }
    assert hosts.hosts_from(environ={}) is None
    assert hosts.hosts_from(environ=env) == hosts.Hosts("10.0.0.1:1234", 4, 3)
    assert hosts.hosts_from(process_id=1, environ=env).process_id == 1
    for bad, message in (
        ({hosts.COORDINATOR_ENV: "a:1"}, "need all three"),
        ({**env, hosts.COORDINATOR_ENV: "nohost"}, "HOST:PORT"),
        ({**env, hosts.COORDINATOR_ENV: "h:99999"}, "HOST:PORT"),
        ({**env, hosts.NUM_PROCESSES_ENV: "two"}, "must be an integer"),
        ({**env, hosts.PROCESS_ID_ENV: "4"}, r"in 0\.\.3, got 4"),
    ):
        with pytest.raises(hosts.HostsError, match=message):
            hosts.hosts_from(environ=bad)
    hosts.initialize(None)  # one process: nothing to join
    hosts.barrier("alone")  # and nobody to wait for


@pytest.mark.parametrize(
    "options, message",
    [
        (
            ["--coordinator", "nohost", "--num-processes", "2", "--process-id", "0"],
            "coordinator must be HOST:PORT",
        ),
        (
            ["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"],
            "process id must be in 0..1, got 2",
        ),
        (["--coordinator", "h:1", "--num-processes", "2"], "need all three"),
        (["--num-processes", "0"], "expected a positive integer, got '0'"),
        (["--process-id", "-1"], "expected an integer >= 0, got '-1'"),
    ],
)
def test_train_refuses_bad_processes_in_one_line(
    options, message, tmp_path, capsys, monkeypatch
):
    for name in (hosts.COORDINATOR_ENV, hosts.NUM_PROCESSES_ENV, hosts.PROCESS_ID_ENV):
        monkeypatch.delenv(name, raising=False)
    try:
        code = main(["train", "bfs", "--out", str(tmp_path / "run"), *options])
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    error = capsys.readouterr().err
    assert code == 2 and message in error and len(error.strip().splitlines()) == 1


@pytest.mark.slow
def test_two_processes_run_a_notebook_and_only_process_0_writes_its_tables(tmp_path):
    """``./run_all.sh`` started twice with the ``NAR_GAP_*`` variables (the
    two machines of docs/notebooks.md, here two processes on one): notebook 02 at the
    smoke profile joins both through ``nar_gap.check_backend``, each of its
    runs is trained in two shares, and process 1's tables go to its own
    folder.  Both read the same finished runs, so their tables agree.
    """
    base = {**os.environ, "JAX_PLATFORMS": "cpu", "NAR_GAP_JOBS": "1"}
    coordinator = f"localhost:{_free_port()}"
    runs, out = tmp_path / "runs", tmp_path / "out"
    started = []
    for index in (0, 1):
        env = _process_env(base, coordinator, index, 2)
        log = tmp_path / f"run_all_{index}.log"
        with open(log, "w") as handle:
            process = subprocess.Popen(
                ["./run_all.sh", "--profile", "smoke", "--only", "02"]
                + ["--out", str(out), "--runs", str(runs)],
                cwd=Path(__file__).resolve().parents[2],
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # so a failure can stop its kernel too
            )
        started.append((process, log))
    try:
        _finish(started)
    finally:
        for process, _ in started:
            if process.poll() is None:
                os.killpg(process.pid, 9)

    table = "results/table10_baselines.csv"
    assert (out / table).read_bytes() == (out / "process-1" / table).read_bytes()
    assert not (out / "process-1" / "process-1").exists()
    trained = sorted(runs.glob("*/metrics.csv"))
    assert trained, "no run was trained"
    executed = (out / "notebooks" / "02_baselines.ipynb").read_text()
    assert "process 0 of 2 trains seeds" in executed
    shared = (out / "process-1" / "notebooks" / "02_baselines.ipynb").read_text()
    assert "process 1 of 2 trains seeds" in shared
