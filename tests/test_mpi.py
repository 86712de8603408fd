"""Issue 6, test 2: a rank of a real MPI job moves to another host, with
another address, while the job runs; the job completes with correct
results and exit status 0.

The job is Debian's Open MPI 4.1.4 (ob1, btl tcp,self: every channel of a
rank is TCP; tests/tools/mpi/README.md says why not MPICH) running
tests/tools/mpi/ring.c, a ring exchange plus an allreduce per iteration
that checks its own results, for 30 s, 3 ranks, one per host::

    A (rackd) rank 0 ----.            R: mpirun (the head node)
    B (rackd) rank 1 ---- R ---- C (rackd, another subnet): rank 0 after
    D (rackd) rank 2 ----'            the move

mpirun runs in R and starts an orted in each host's network namespace
through tests/tools/mpi/nsrsh (the "ssh": it maps the host's address to
its namespace and runs ``nsenter --net=/run/netns/NS -- sh -c CMD``, so
that the mount namespace stays the one CRIU dumps). Each orted starts its
rank under ``rackckpt run``, which relays the rank's stdio and its PMIx
connection to orted (loopback TCP, named in five variables)::

    RACKS_MPI_NSMAP="10.71.1.2=NSa 10.71.2.2=NSb 10.71.4.2=NSd" \\
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \\
    nsenter --net=/run/netns/NSr mpirun.openmpi -np 3 \\
      --host 10.71.1.2,10.71.2.2,10.71.4.2 --map-by node --bind-to none \\
      --mca plm_rsh_agent tests/tools/mpi/nsrsh --mca plm_rsh_no_tree_spawn 1 \\
      --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include eth0 \\
      --mca oob_tcp_if_include 10.71.0.0/16 \\
      -x PMIX_MCA_gds=hash --mca shmem mmap -x RACKS_RELAY_DIR \\
      build/rackckpt run --relay-loopback-env PMIX_SERVER_URI2 \\
        --relay-loopback-env PMIX_SERVER_URI21 \\
        --relay-loopback-env PMIX_SERVER_URI3 \\
        --relay-loopback-env PMIX_SERVER_URI4 \\
        --relay-loopback-env PMIX_SERVER_URI41 -- build/mpi/ring-openmpi 30

    orted (A) --> rackckpt run (the wrapper, stays on A)
                   --> agent (session leader: the tree to dump, with the rank)
                        --> ring-openmpi (rank 0; PMIx to the agent's port)

After about 8 s, rank 0's tree (the agent, found as the rank's session
leader) is dumped on A (``nsenter --net=NSa rackckpt dump PID DIR``) and
restored on C (``rackckpt restore DIR``, detached: a keeper process
relays the stdio and PMIx channels back to the wrapper on A). The rank's
connections to ranks 1 and 2 are racks-managed (rackd on every host);
rackd on C reconnects them from C's address. The job's end (the fence
and finalize over PMIx, the exit status) goes through the relay.
"""

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import pytest

import testbed

# Jobs must report ready within a deadline: never beside a CPU-heavy test
# (conftest.py; tests/README.md, "Sharing the machine").
pytestmark = pytest.mark.timing

_spec = importlib.util.spec_from_file_location(
    "mpijob", testbed.TOOLS / "mpi" / "mpijob.py")
mpijob = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mpijob)

RACKCKPT = testbed.REPO / "build" / "rackckpt"
CRIU = testbed.REPO / "build" / "criu" / "sbin" / "criu"
FAST = "suspend_after = 1s\n"
SECONDS = 30            # the ring's run time
DUMP_AFTER = 8.0        # seconds after every rank is ready
HOSTS = ["a", "b", "d"]  # rank i on HOSTS[i]; rank 0 moves from A to C


def need_mpi():
    testbed.need_criu(CRIU)
    why = mpijob.missing("openmpi")
    if why:
        pytest.fail(why, pytrace=False)


def rackckpt(rackd, *args, env=None, timeout=60):
    """rackckpt -S (rackd's socket) ARGS in rackd's namespace."""
    return subprocess.run(rackd.ns.exec_prefix(nsenter=True) +
                          [str(RACKCKPT), "-S", str(rackd.sock),
                           *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env=env)


def gone(*pids):
    return not any(Path(f"/proc/{p}").exists() for p in pids)


def kill_restored(pids):
    """The restored tree (and its keeper) are not children of the test:
    killed by pid, if they still are what they were."""
    for pid in pids:
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            if comm in ("rackckpt", "ring-openmpi"):
                os.kill(pid, signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError):
            pass


def move_rank_mid_run(relay_dir, ckpt):
    """One job; rank 0 moved from A to C after DUMP_AFTER seconds. Returns
    (dump seconds, restore's summary line, job wall time)."""
    env = {**os.environ, "RACKS_RELAY_DIR": str(relay_dir)}
    with testbed.Topology.create() as topo:
        topo.add_host("c")
        topo.add_host("d")
        rk = {h: topo.start_rackd(h, config=FAST) for h in "abcd"}
        # Started once more if orted dies at start-up (it does, 1 in 20).
        job, pids = mpijob.start_ready(
            topo, HOSTS, seconds=SECONDS, extra=["-x", "RACKS_RELAY_DIR"],
            env={"RACKS_RELAY_DIR": str(relay_dir)},
            say=say)
        restored = []
        try:
            ready = time.monotonic()
            root = job.session_pid(0)           # rackckpt's agent
            assert root != pids[0] and (relay_dir / str(root)).exists()
            # Wait for the mid-run point: ranks 1 and 2 keep running
            # across the move, rank 0 is paused while it is moved.
            time.sleep(max(0.0, DUMP_AFTER - (time.monotonic() - ready)))
            dump = rackckpt(rk["a"], "dump", root, ckpt, env=env)
            assert dump.returncode == 0, dump.stderr
            assert "2 connection(s) exported" in dump.stdout, dump.stdout
            took = float(re.search(r"in (\d+\.\d+) s", dump.stdout)[1])
            # The wrapper reaps the dumped tree: CRIU needs its pids.
            testbed.wait_until(lambda: gone(root, pids[0]), 5,
                               "the dumped rank's pids to be free")
            restored = [root, pids[0]]
            restore = rackckpt(rk["c"], "restore", ckpt, env=env)
            assert restore.returncode == 0, (restore.stdout, restore.stderr)
            summary = restore.stdout.strip().splitlines()[0]
            assert "2 connection(s) connected again" in summary, summary
            stat = Path(f"/proc/{root}/stat").read_text()
            restored.append(int(stat.rsplit(")", 1)[1].split()[1]))  # keeper
            assert os.stat(f"/proc/{pids[0]}/ns/net").st_ino == \
                os.stat(f"/run/netns/{topo.ns('c').name}").st_ino
            rc, out, err = job.wait(timeout=SECONDS + 60)
            wall = time.monotonic() - job.started
            try:
                done = job.check(rc, out, err)
            except mpijob.MpiError as e:
                logs = "\n".join(f"--- rackd {h} ---\n{r.log()[-3000:]}"
                                 for h, r in rk.items())
                raise AssertionError(f"{e}\n{logs}") from None
            assert len(set(done.values())) == 1 and done[0] > 100, done
            status = rk["c"].status()
            assert status["migrations_imported"] == 2, status
        finally:
            job.kill()
            kill_restored(restored)
    return took, summary, wall


def say(line):
    """A retried start is reported in the run's output even when the test
    passes: a warning in pytest's summary, and on stdout."""
    print(line, flush=True)
    warnings.warn(line)


@pytest.fixture
def workdir():
    path = Path(tempfile.mkdtemp(prefix="rackckpt-mpi-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_mpi_rank_moves_to_another_subnet_mid_run(workdir):
    """Rank 0 of a 3-rank Open MPI job moves from A to C (another subnet)
    after 8 s of a 30 s run: the job completes, every rank did the same
    number of checked iterations, mpirun exits 0."""
    need_mpi()
    took, summary, wall = move_rank_mid_run(workdir / "relay", workdir / "ckpt")
    print(f"dump {took:.3f} s; restore: {summary}; job {wall:.1f} s")


def test_mpi_job_whose_daemon_never_starts_is_started_once_more(workdir):
    """A daemon lost at start-up (nsrsh told to start nothing once, as
    when orted dies after detaching) leaves mpirun waiting silently: the
    helper every MPI test starts its job with notices that the ranks never
    report ready, kills the job, says so and starts it once more, and the
    second job completes."""
    need_mpi()
    lost = workdir / "lost-daemon"
    said = []
    with testbed.Topology.create() as topo:
        topo.add_host("d")
        job, pids = mpijob.start_ready(
            topo, HOSTS, seconds=2, timeout=10, wrapper=(),
            env={"RACKS_MPI_LOSE_DAEMON": str(lost)}, say=said.append)
        try:
            assert lost.exists(), "nsrsh did not lose the first daemon"
            assert len(said) == 1 and "started once more" in said[0], said
            assert sorted(pids) == [0, 1, 2], pids
            done = job.check(*job.wait(timeout=60))
            assert len(set(done.values())) == 1, done
        finally:
            job.kill()
    print(said[0])


@pytest.mark.slow
def test_mpi_rank_moves_ten_times_in_ten(workdir):
    """The same, 10 runs: all 10 must pass."""
    need_mpi()
    results = []
    for i in range(10):
        run = workdir / f"run{i}"
        run.mkdir()
        took, summary, wall = move_rank_mid_run(run / "relay", run / "ckpt")
        print(f"run {i + 1}: dump {took:.3f} s; restore: {summary}; "
              f"job {wall:.1f} s", flush=True)
        results.append(took)
    assert len(results) == 10
