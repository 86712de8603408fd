"""MPI jobs whose ranks move to other hosts while the job runs (issues 6
and 24): the job completes, every rank checked every iteration, and
mpirun exits 0.

The job is Debian's Open MPI 4.1.4 running tests/tools/mpi/ring.c, a ring
exchange plus an allreduce per iteration that checks its own results
(tests/tools/mpi/README.md says why not MPICH), started the way a user
would: ``rackckpt mpirun`` with mpirun's own options, 4 ranks on three
hosts, two of them on D::

    A (rackd) rank 0 ---.              R: rackckpt mpirun, mpirun (the
    B (rackd) rank 1 ---+--- R          head node), the job's controller
    D (rackd) ranks 2,3 '   |
                            C (rackd, another subnet): where ranks go

    RACKS_MPI_NSMAP="10.71.1.2=NSa ..." RACKS_MPI_SOCKMAP="NSa=SOCK ..." \\
    nsenter --net=/run/netns/NSr rackckpt mpirun --ckpt-dir DIR \\
      --mpirun mpirun.openmpi -np 4 \\
      --host 10.71.1.2:1,10.71.2.2:1,10.71.4.2:2 --map-by slot \\
      --mca plm_rsh_agent tests/tools/mpi/nsrsh \\
      --mca plm_rsh_no_tree_spawn 1 --mca btl_tcp_if_include eth0 \\
      --mca oob_tcp_if_include 10.71.0.0/16 build/mpi/ring-openmpi 30

nsrsh is the test-bed's "ssh" (it enters the host's network namespace,
and gives rackckpt that host's rackd socket). The ranks are moved with
``rackckpt migrate JOB RANK --to NODE`` and ``rackckpt evacuate NODE --to
NODE``, run beside the job, which reach the nodes through the job's own
remote shell (nsrsh). Ranks 2 and 3 on D are connected through D itself:
they move together.

The slow tests also run the lower layer directly: ranks under Open MPI's
own mpirun with ``--mca orte_fork_agent "rackckpt run --openmpi --"``,
moved by pid with ``rackckpt dump`` and ``restore``.
"""

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
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
ASAN_RACKCKPT = testbed.REPO / "build" / "asan" / "rackckpt"
CRIU = testbed.REPO / "build" / "criu" / "sbin" / "criu"
FAST = "suspend_after = 1s\n"
RANKS = ["a", "b", "d", "d"]       # rank i on RANKS[i]


def need_mpi():
    testbed.need_criu(CRIU)
    why = mpijob.missing("openmpi")
    if why:
        pytest.fail(why, pytrace=False)


def say(line):
    """A retried start is reported in the run's output even when the test
    passes: a warning in pytest's summary, and on stdout."""
    print(line, flush=True)
    warnings.warn(line)


def netns_of(pid):
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def ns_inode(topo, host):
    return os.stat(f"/run/netns/{topo.ns(host).name}").st_ino


class Cluster:
    """The test-bed above with a job started by ``rackckpt mpirun``;
    ``ctl(...)`` runs rackckpt's job commands beside it."""

    def __init__(self, topo, work, seconds, env=None, sanitized=False):
        self.topo = topo
        self.work = work
        self.binary = ASAN_RACKCKPT if sanitized else RACKCKPT
        self.env = {"RACKS_RELAY_DIR": str(work / "relay"),
                    "RACKS_JOBS_DIR": str(work / "jobs"), **(env or {})}
        if sanitized:
            if not ASAN_RACKCKPT.exists():
                pytest.fail(f"{ASAN_RACKCKPT} missing: run `make asan`")
            # Every rackckpt of the job (controller, wrappers, agents,
            # keepers, the moves' steps on the nodes) reports to a file
            # of its own there; CRIU is not next to that binary.
            self.env.update(RACKS_CRIU=str(CRIU), ASAN_OPTIONS=(
                f"detect_leaks=1:abort_on_error=0:exitcode=66:"
                f"log_path={work}/asan"))
        self.rackd = {h: topo.start_rackd(h, config=FAST) for h in "abcd"}
        # Started once more if orted dies at start-up (1 in 20, NOTES).
        self.job, self.pids = mpijob.start_ready(
            topo, RANKS, seconds=seconds, via_rackckpt=True,
            ckpt_dir=work / "ckpt", nodes=["c"], env=self.env, say=say,
            binary=self.binary)
        self.ready = time.monotonic()
        self.id = self.jobs()["job"]

    def addr(self, host):
        return self.topo.addr[host]["v4"]

    def ctl(self, *args, env=None, timeout=300):
        full = {**mpijob.environment("openmpi", self.topo, "abcd"),
                **self.env, **(env or {})}
        return subprocess.run([str(self.binary), *map(str, args)], env=full,
                              capture_output=True, text=True, timeout=timeout)

    def jobs(self):
        proc = self.ctl("jobs", "--json")
        assert proc.returncode == 0, proc.stderr
        jobs = json.loads(proc.stdout)["jobs"]
        assert len(jobs) == 1, jobs
        return jobs[0]

    def where(self, rank):
        """The rank's node as the job says, and the host its process runs
        in (by network namespace)."""
        job = self.jobs()
        entry = job["ranks"][rank]
        pid = self.pids[rank]
        hosts = [h for h in "abcd" if netns_of(pid) == ns_inode(self.topo, h)]
        return entry, hosts

    def finish(self, timeout=120):
        """The job's end: exit 0, every rank's iterations checked."""
        rc, out, err = self.job.wait(timeout=timeout)
        try:
            done = self.job.check(rc, out, err)
        except mpijob.MpiError as e:
            logs = "\n".join(f"--- rackd {h} ---\n{r.log()[-3000:]}"
                             for h, r in self.rackd.items())
            raise AssertionError(f"{e}\n{logs}") from None
        assert len(done) == 4 and len(set(done.values())) == 1, done
        assert done[0] > 100, done
        # What any of the sanitized rackckpt processes reported.
        reports = list(self.work.glob("asan*"))
        assert not reports, "\n".join(r.read_text()[:3000] for r in reports)
        return done

    def kill(self):
        self.job.kill()
        # What was restored on C is in the job's namespaces too.
        for pid in mpijob.leftovers([self.topo.ns(h).name for h in "abcd"]):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def workdir():
    path = Path(tempfile.mkdtemp(prefix="rackckpt-mpi-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cluster_factory(workdir):
    made = []

    def make(seconds=30, env=None, sanitized=False):
        topo = testbed.Topology.create()
        made.append(topo)
        topo.add_host("c")
        topo.add_host("d")
        cluster = Cluster(topo, workdir, seconds, env, sanitized)
        made.append(cluster)
        return cluster

    yield make
    for thing in reversed(made):
        if isinstance(thing, Cluster):
            thing.kill()
        else:
            thing.close()


def wait_mid_run(cluster, after):
    time.sleep(max(0.0, after - (time.monotonic() - cluster.ready)))


def moved(proc):
    """The one-job JSON report of migrate."""
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def test_rank_moves_by_number_and_a_target_without_rackd_is_refused(
        cluster_factory):
    """rackckpt jobs lists the 4 ranks where mpirun put them; a move of
    rank 0 to C while C's rackd is stopped is refused before anything
    changed (the rank runs on A, never stopped); with C's rackd back the
    same command moves it (JSON: moved, its 3 connections, downtime under
    3 s), jobs says so, and the job completes with every iteration
    checked. Every rackckpt here, from the job's controller to the
    restored rank's agent, runs under AddressSanitizer and UBSan, and
    none reports anything."""
    need_mpi()
    cl = cluster_factory(seconds=25, sanitized=True)
    job = cl.jobs()
    assert job["state"] == "running" and job["np"] == 4, job
    assert [(r["rank"], r["node"], r["address"], r["state"], r["moves"])
            for r in job["ranks"]] == [
        (0, cl.addr("a"), cl.addr("a"), "running", 0),
        (1, cl.addr("b"), cl.addr("b"), "running", 0),
        (2, cl.addr("d"), cl.addr("d"), "running", 0),
        (3, cl.addr("d"), cl.addr("d"), "running", 0)]
    # The pid jobs shows leads the rank's session: the tree that moves.
    for r in job["ranks"]:
        assert cl.job.session_pid(r["rank"]) == r["pid"], r
    # Bad moves are refused with the reason, and change nothing.
    for args, why in [
            ((7, "--to", cl.addr("c")), f"job {cl.id} has no rank 7"),
            ((0, "--to", cl.addr("a")), f"rank 0 already runs on {cl.addr('a')}"),
            ((0, "--to", cl.addr("b")), f"{cl.addr('b')} runs rank 1 of job {cl.id}: "
             "a rank cannot join a node where ranks it talks to run"),
            ((2, "--to", cl.addr("c")), "ranks 2, 3 are connected through "
             f"{cl.addr('d')} itself, which racks cannot carry between "
             "hosts: they move together"),
            ((0, "--to", "10.71.99.2"), "10.71.99.2: it does not answer "
             "(nsrsh: host 10.71.99.2 is not in RACKS_MPI_NSMAP")]:
        proc = cl.ctl("migrate", job["job"], *args)
        assert proc.returncode == 1, proc
        assert why in proc.stdout + proc.stderr, (why, proc.stdout, proc.stderr)
    assert [(r["node"], r["moves"], r["state"]) for r in cl.jobs()["ranks"]] \
        == [(cl.addr(h), 0, "running") for h in RANKS]
    wait_mid_run(cl, 5)
    cl.rackd["c"].stop()
    before = cl.pids[0]
    refused = cl.ctl("migrate", "--json", job["job"], 0, "--to", cl.addr("c"))
    assert refused.returncode == 1, refused
    report = moved(refused)
    assert not report["ok"] and not report["ranks"][0]["moved"], report
    assert "no rackd runs there" in report["ranks"][0]["error"], report
    assert report["ranks"][0]["node"] == cl.addr("a"), report
    entry, hosts = cl.where(0)
    assert (entry["node"], entry["moves"], entry["state"], hosts) == \
        (cl.addr("a"), 0, "running", ["a"]), (entry, hosts)
    # Nothing was dumped: no image anywhere, the same process runs.
    assert not list(cl.work.glob("ckpt/**/*.img"))
    assert Path(f"/proc/{before}").exists()
    # The positive control: the same move with C's rackd running.
    cl.rackd["c"].start()
    proc = cl.ctl("migrate", "--json", job["job"], 0, "--to", cl.addr("c"))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    report = moved(proc)
    rank0 = report["ranks"][0]
    assert report["ok"] and rank0["moved"] and rank0["error"] is None, report
    assert (rank0["from"], rank0["to"], rank0["node"]) == \
        (cl.addr("a"), cl.addr("c"), cl.addr("c")), rank0
    assert rank0["connections"] == 3, rank0      # ranks 1, 2 and 3
    assert 0 < rank0["dump_s"] < rank0["downtime_s"] < 3.0, rank0
    assert "rank 0: checkpointed on" in proc.stderr     # progress, stderr
    entry, hosts = cl.where(0)
    assert (entry["node"], entry["address"], entry["moves"], hosts) == \
        (cl.addr("c"), cl.addr("c"), 1, ["c"]), (entry, hosts)
    text = cl.ctl("jobs").stdout
    assert re.search(rf"^ +0 +{re.escape(cl.addr('c'))} .* 1 +\(from "
                     rf"{re.escape(cl.addr('a'))}; last downtime", text,
                     re.M), text
    cl.finish()
    assert cl.rackd["c"].status()["migrations_imported"] == 3
    # The sanitizers' positive control: the same options make the binary
    # write there (its exit statistics, asked for here).
    opts = cl.env["ASAN_OPTIONS"] + ":atexit=1:print_stats=1"
    proc = subprocess.run([str(ASAN_RACKCKPT), "--version"], text=True,
                          capture_output=True, env={**os.environ,
                                                    "ASAN_OPTIONS": opts})
    assert proc.returncode == 0, proc
    stats = list(cl.work.glob("asan*"))
    assert len(stats) == 1 and "AddressSanitizer exit stats" in \
        stats[0].read_text(), stats
    print(f"rank 0 A -> C: dump {rank0['dump_s']:.3f} s, restore "
          f"{rank0['restore_s']:.3f} s, downtime {rank0['downtime_s']:.3f} s")


def test_job_whose_daemon_never_starts_is_started_once_more(workdir):
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
            topo, ["a", "b", "d"], seconds=2, timeout=10, wrapper=(),
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
def test_node_with_two_ranks_is_evacuated(cluster_factory):
    """evacuate D, whose ranks 2 and 3 are connected through D itself:
    to C with one slot it is refused for want of room and nothing moves;
    to C, both go there together (one group restore, their own
    connection fenced until both run) and the job completes."""
    need_mpi()
    cl = cluster_factory(seconds=30, sanitized=True)
    wait_mid_run(cl, 5)
    proc = cl.ctl("evacuate", "--json", cl.addr("d"), "--to",
                  f"{cl.addr('c')}:1")
    assert proc.returncode == 1, proc
    report = json.loads(proc.stdout)
    ranks = report["jobs"][0]["ranks"]
    assert [r["rank"] for r in ranks] == [2, 3] and not report["ok"], report
    for r in ranks:
        assert not r["moved"] and r["node"] == cl.addr("d"), r
        assert "no room: 2 rank(s) to place, 1 of its 1 slot(s) free" in \
            r["error"], r
    assert [cl.where(r)[1] for r in (2, 3)] == [["d"], ["d"]]
    proc = cl.ctl("evacuate", "--json", cl.addr("d"), "--to", cl.addr("c"))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    report = json.loads(proc.stdout)
    assert report["ok"] and report["node"] == cl.addr("d"), report
    for r in report["jobs"][0]["ranks"]:
        assert r["moved"] and r["node"] == cl.addr("c"), r
        assert r["connections"] == 2 and 0 < r["downtime_s"] < 3.0, r
    assert [cl.where(r)[1] for r in (2, 3)] == [["c"], ["c"]]
    cl.finish()
    for r in report["jobs"][0]["ranks"]:
        print(f"rank {r['rank']} D -> C: dump {r['dump_s']:.3f} s, restore "
              f"{r['restore_s']:.3f} s, downtime {r['downtime_s']:.3f} s")


# CRIU for migrate's steps: on a restore in the namespace it is told, it
# says so (FLAG) and waits to be killed with everything else there.
FAKE_CRIU = """#!/bin/sh
if [ "$1" = restore ] && [ "$(stat -L -c %i /proc/self/ns/net)" = \\
     "$(stat -L -c %i "$RACKS_TEST_DIE_NETNS")" ]; then
	: > "$RACKS_TEST_DIE_FLAG"
	sleep 60
fi
exec {criu} "$@"
"""


def kill_host(topo, host):
    """Every process in HOST's namespace (the test's own: it made the
    namespace), as when the host dies."""
    inode, killed = ns_inode(topo, host), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}/ns/net").st_ino == inode:
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
        except OSError:         # gone, or not ours to look at
            continue
    return killed


@pytest.mark.slow
def test_target_dying_during_restore_leaves_the_rank_on_its_source(
        cluster_factory, workdir):
    """C dies (every process there killed, its rackd too) once its CRIU
    starts the restore of rank 0: migrate says so, restores the rank on
    A, where it goes on with its connections, and the job completes."""
    need_mpi()
    flag = workdir / "c-restoring"
    fake = workdir / "criu"
    fake.write_text(FAKE_CRIU.format(criu=CRIU))
    fake.chmod(0o755)
    cl = cluster_factory(seconds=30, sanitized=True)
    env = {"RACKS_CRIU": str(fake), "RACKS_TEST_DIE_FLAG": str(flag),
           "RACKS_TEST_DIE_NETNS": f"/run/netns/{cl.topo.ns('c').name}"}
    killed = []

    def die():
        deadline = time.monotonic() + 120
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if flag.exists():
            killed.extend(kill_host(cl.topo, "c"))

    wait_mid_run(cl, 5)
    killer = threading.Thread(target=die, daemon=True)
    killer.start()
    proc = cl.ctl("migrate", "--json", cl.id, 0, "--to", cl.addr("c"),
                  env=env)
    killer.join(5)
    assert flag.exists() and killed, "C was not killed during the restore"
    assert proc.returncode == 1, proc
    rank0 = moved(proc)["ranks"][0]
    assert not rank0["moved"] and not rank0["stopped"], rank0
    assert rank0["error"].startswith(f"restore on {cl.addr('c')} failed "
                                     "(killed by signal 9)"), rank0
    assert rank0["node"] == cl.addr("a"), rank0
    assert f"rank 0: runs on {cl.addr('a')} again" in proc.stderr, proc.stderr
    assert 0 < rank0["downtime_s"] < 30, rank0
    entry, hosts = cl.where(0)
    assert (entry["node"], entry["moves"], hosts) == (cl.addr("a"), 0, ["a"])
    cl.finish()
    print(proc.stderr)
    print(f"rank 0 back on A {rank0['downtime_s']:.3f} s after its dump "
          "started")


@pytest.mark.slow
def test_rank_moves_away_and_back(cluster_factory):
    """Rank 0 moves A -> C, then C -> A: the keeper on C relays for it and
    lets it go again, rackd on A takes its connections back at their own
    address, and the job completes."""
    need_mpi()
    cl = cluster_factory(seconds=35, sanitized=True)
    wait_mid_run(cl, 5)
    downtimes = []
    for dest in ("c", "a"):
        proc = cl.ctl("migrate", "--json", cl.id, 0, "--to", cl.addr(dest))
        assert proc.returncode == 0, (proc.stdout, proc.stderr)
        rank0 = moved(proc)["ranks"][0]
        assert rank0["moved"] and rank0["node"] == cl.addr(dest), rank0
        assert 0 < rank0["downtime_s"] < 3.0, rank0
        downtimes.append(rank0["downtime_s"])
        entry, hosts = cl.where(0)
        assert (entry["node"], hosts) == (cl.addr(dest), [dest])
        time.sleep(3)
    assert cl.where(0)[0]["moves"] == 2
    cl.finish()
    print(f"rank 0 A -> C -> A: downtimes {downtimes[0]:.3f} s, "
          f"{downtimes[1]:.3f} s")


# --- the lower layer: Open MPI's own mpirun, ranks moved by pid ----------

def move_rank_mid_run(relay_dir, ckpt, seconds=30, dump_after=8.0):
    """A 3-rank job under Open MPI's own mpirun with rackckpt as its fork
    agent (ranks on A, B, D); rank 0's tree dumped on A by pid and
    restored on C. Returns (dump seconds, restore's summary line, job
    wall time)."""
    env = {"RACKS_RELAY_DIR": str(relay_dir)}
    agent = f"{RACKCKPT} run --openmpi --"
    with testbed.Topology.create() as topo:
        topo.add_host("c")
        topo.add_host("d")
        rk = {h: topo.start_rackd(h, config=FAST) for h in "abcd"}
        job, pids = mpijob.start_ready(
            topo, ["a", "b", "d"], seconds=seconds, wrapper=(),
            extra=["--mca", "orte_fork_agent", agent, "-x", "RACKS_RELAY_DIR"],
            env=env, say=say)
        restored = []
        try:
            ready = time.monotonic()
            root = job.session_pid(0)           # rackckpt's agent
            assert root != pids[0] and (relay_dir / str(root)).exists()
            time.sleep(max(0.0, dump_after - (time.monotonic() - ready)))
            dump = subprocess.run(
                topo.a.exec_prefix(nsenter=True) +
                [str(RACKCKPT), "-S", str(rk["a"].sock), "dump", str(root),
                 str(ckpt)], capture_output=True, text=True, timeout=60,
                env={**os.environ, **env})
            assert dump.returncode == 0, dump.stderr
            assert "2 connection(s) exported" in dump.stdout, dump.stdout
            took = float(re.search(r"in (\d+\.\d+) s", dump.stdout)[1])
            testbed.wait_until(lambda: not any(
                Path(f"/proc/{p}").exists() for p in (root, pids[0])), 5,
                "the dumped rank's pids to be free")
            restored = [root, pids[0]]
            restore = subprocess.run(
                topo.ns("c").exec_prefix(nsenter=True) +
                [str(RACKCKPT), "-S", str(rk["c"].sock), "restore", str(ckpt)],
                capture_output=True, text=True, timeout=60,
                env={**os.environ, **env})
            assert restore.returncode == 0, (restore.stdout, restore.stderr)
            summary = restore.stdout.strip().splitlines()[-1]
            assert "2 connection(s) connected again" in summary, summary
            assert netns_of(pids[0]) == ns_inode(topo, "c")
            rc, out, err = job.wait(timeout=seconds + 60)
            wall = time.monotonic() - job.started
            done = job.check(rc, out, err)
            assert len(set(done.values())) == 1 and done[0] > 100, done
            assert rk["c"].status()["migrations_imported"] == 2
        finally:
            job.kill()
            for pid in restored:
                try:
                    if Path(f"/proc/{pid}/comm").read_text().strip() in (
                            "rackckpt", "ring-openmpi"):
                        os.kill(pid, signal.SIGKILL)
                except (FileNotFoundError, ProcessLookupError):
                    pass
    return took, summary, wall


@pytest.mark.slow
def test_rank_of_openmpis_own_mpirun_moves_by_pid(workdir):
    """mpirun --mca orte_fork_agent "rackckpt run --openmpi --": every rank
    is movable with nothing else set (the wrapper finds the PMIx
    variables itself); rank 0's tree moves A -> C by pid mid-run."""
    need_mpi()
    took, summary, wall = move_rank_mid_run(workdir / "relay", workdir / "ckpt")
    print(f"dump {took:.3f} s; restore: {summary}; job {wall:.1f} s")


@pytest.mark.slow
def test_rank_moves_by_pid_ten_times_in_ten(workdir):
    """The same, 10 runs: all 10 must pass."""
    need_mpi()
    for i in range(10):
        run = workdir / f"run{i}"
        run.mkdir()
        took, summary, wall = move_rank_mid_run(run / "relay", run / "ckpt")
        print(f"run {i + 1}: dump {took:.3f} s; restore: {summary}; "
              f"job {wall:.1f} s", flush=True)
