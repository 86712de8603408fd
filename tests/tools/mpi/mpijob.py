"""Run tests/tools/mpi/ring.c as a real MPI job across test-bed hosts.

One rank per namespaced host, all traffic TCP, no ssh daemon: the
launcher runs in one namespace (by default the router R, which reaches
every host) and starts its per-host daemon in each host's network
namespace through ``nsrsh``, which maps the host's address to its
namespace (``RACKS_MPI_NSMAP``) and runs ``nsenter --net=... sh -c``.

Open MPI (the default; see README.md for why)::

    mpirun.openmpi -np 3 --host 10.71.1.2,10.71.2.2,10.71.3.2 --map-by node
        --mca plm_rsh_agent nsrsh --mca plm_rsh_no_tree_spawn 1
        --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include eth0
        --mca oob_tcp_if_include 10.71.0.0/16
        -x PMIX_MCA_gds=hash --mca shmem mmap [WRAPPER...] ring SECONDS

    launcher (mpirun, in R) --TCP--> orted in each host's namespace
    orted --fork--> [wrapper] --> ring rank

MPICH (hydra)::

    mpiexec.hydra -launcher ssh -launcher-exec nsrsh -localhost 10.71.1.1
        -hosts 10.71.1.2,10.71.2.2,10.71.3.2 -n 3 -ppn 1
        -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0 [WRAPPER...] ring

Usage from a test (mpirun in R, ranks 0, 1, 2 on A, B, C)::

    with Topology.create() as topo:
        topo.add_host("c")
        job = mpijob.start(topo, ["a", "b", "c"], seconds=30, wrapdir=tmp)
        try:
            pids = job.ready()               # {rank: pid}, all initialised
            root = job.session_pid(1)        # criu dump -t root (rank 1's tree)
            ...
            job.check(*job.wait(timeout=120))  # exit 0, every rank "ok"
        finally:
            job.kill()                       # also the daemonized orteds

A rank started directly by its daemon cannot be dumped without the job
aborting, so by default every rank runs under ``rackckpt run`` with its
PMIx channel relayed (``rackckpt_run()``: the wrapper stays with orted,
the rank's session under rackckpt's loopback agent is what moves; its
root is ``job.session_pid(r)``). ``wrapper`` puts any other argv prefix
there (``()`` for none); ``wrapdir`` runs every rank under ``rankwrap
WRAPDIR`` instead (own session, no tty, stdio to WRAPDIR/rankR.*), for
CRIU in place without rackckpt.
"""

import ipaddress
import os
import re
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

MPI_DIR = Path(__file__).resolve().parent
REPO = MPI_DIR.parents[2]
BUILD = REPO / "build" / "mpi"
NSRSH = MPI_DIR / "nsrsh"
RANKWRAP = MPI_DIR / "rankwrap"
RACKCKPT = REPO / "build" / "rackckpt"
RING_SRC = MPI_DIR / "ring.c"

IMPLS = {
    "openmpi": {"mpicc": "mpicc.openmpi", "launcher": "mpirun.openmpi",
                "packages": ["openmpi-bin", "libopenmpi-dev"]},
    "mpich": {"mpicc": "mpicc.mpich", "launcher": "mpiexec.hydra",
              "packages": ["mpich", "libmpich-dev"]},
}

# Where an Open MPI rank finds its orted's PMIx server (all five hold
# JOBID.VPID;tcp4://127.0.0.1:PORT): the loopback connection to relay.
PMIX_URI_VARS = ("PMIX_SERVER_URI2", "PMIX_SERVER_URI21", "PMIX_SERVER_URI3",
                 "PMIX_SERVER_URI4", "PMIX_SERVER_URI41")


def rackckpt_run(binary=RACKCKPT):
    """The argv prefix that runs a rank under ``rackckpt run``, movable
    with ``rackckpt dump``/``restore``: stdio relayed, and the PMIx
    connection to orted through the loopback agent."""
    argv = [str(binary), "run"]
    for var in PMIX_URI_VARS:
        argv += ["--relay-loopback-env", var]
    return argv + ["--"]


READY = re.compile(r"^rank (\d+): pid (\d+) of (\d+) ready$", re.M)
DONE = re.compile(r"^rank (\d+): (\d+) iterations ok$", re.M)


class MpiError(RuntimeError):
    """The MPI toolchain is missing or a job failed."""


def missing(impl="openmpi"):
    """None if impl's compiler and launcher are installed, else why not."""
    spec = IMPLS[impl]
    absent = [t for t in (spec["mpicc"], spec["launcher"]) if shutil.which(t) is None]
    if absent:
        return (f"{impl}: {', '.join(absent)} not found "
                f"(apt-get install {' '.join(spec['packages'])})")
    return None


def build_ring(impl="openmpi"):
    """Compile ring.c with impl's mpicc into build/mpi/ring-IMPL (when
    stale); return its path."""
    why = missing(impl)
    if why:
        raise MpiError(why)
    BUILD.mkdir(parents=True, exist_ok=True)
    binary = BUILD / f"ring-{impl}"
    if binary.exists() and binary.stat().st_mtime >= RING_SRC.stat().st_mtime:
        return binary
    tmp = binary.with_suffix(".tmp")
    cmd = [IMPLS[impl]["mpicc"], "-std=c11", "-O2", "-g", "-Wall", "-Wextra",
           "-Werror", "-o", str(tmp), str(RING_SRC)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise MpiError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}")
    tmp.replace(binary)
    return binary


def nsmap(topo, hosts):
    """RACKS_MPI_NSMAP value: 'ADDR=NETNS ...' for hosts' IPv4 addresses."""
    return " ".join(f"{topo.addr[h]['v4']}={topo.ns(h).name}" for h in hosts)


def host_list(addrs):
    """mpirun's --host and --map-by for one rank per entry of addrs, in
    order: 'A,B,C' by node, or 'A:1,B:1,D:2' by slot when an address
    repeats (its ranks are then consecutive)."""
    counts = {}
    for a in addrs:
        counts[a] = counts.get(a, 0) + 1
    if len(counts) == len(addrs):
        return ",".join(addrs), "node"
    return ",".join(f"{a}:{n}" for a, n in counts.items()), "slot"


def rackckpt_mpirun(addrs, program, args=(), ckpt_dir=None, extra=(),
                    binary=RACKCKPT):
    """`rackckpt mpirun`'s argv: what a user gives mpirun on this test-bed
    (the hosts, the "ssh", the interfaces); rackckpt adds the rest."""
    hostlist, by = host_list(addrs)
    return [str(binary), "mpirun",
            *(["--ckpt-dir", str(ckpt_dir)] if ckpt_dir else []),
            "--mpirun", IMPLS["openmpi"]["launcher"],
            "-np", str(len(addrs)), "--host", hostlist, "--map-by", by,
            "--mca", "plm_rsh_agent", str(NSRSH),
            "--mca", "plm_rsh_no_tree_spawn", "1",
            "--mca", "btl_tcp_if_include", "eth0",
            "--mca", "oob_tcp_if_include", "10.71.0.0/16",
            *map(str, extra), str(program), *map(str, args)]


def command(impl, addrs, program, args=(), wrapper=(), launcher_addr=None,
            extra=()):
    """The launcher's argv for one rank on each of addrs (in order)."""
    n = len(addrs)
    hostlist, by = host_list(addrs)
    tail = [*map(str, wrapper), str(program), *map(str, args)]
    if impl == "openmpi":
        return [IMPLS[impl]["launcher"], "-np", str(n), "--host", hostlist,
                "--map-by", by, "--bind-to", "none",
                "--mca", "plm_rsh_agent", str(NSRSH),
                "--mca", "plm_rsh_no_tree_spawn", "1",
                "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
                "--mca", "btl_tcp_if_include", "eth0",
                "--mca", "oob_tcp_if_include", "10.71.0.0/16",
                # no shared memory between a rank and its orted: PMIx's
                # job data over its socket, not mmapped dstore files in
                # the session dir; no leaked /dev/shm/open_mpi.0000 fd
                "-x", "PMIX_MCA_gds=hash", "--mca", "shmem", "mmap",
                *map(str, extra), *tail]
    if impl == "mpich":
        if launcher_addr is None:
            raise ValueError("mpich: hydra needs launcher_addr (-localhost)")
        return [IMPLS[impl]["launcher"], "-launcher", "ssh",
                "-launcher-exec", str(NSRSH), "-localhost", launcher_addr,
                "-hosts", hostlist, "-n", str(n), "-ppn", "1",
                "-genv", "UCX_TLS", "tcp,self", "-genv", "UCX_NET_DEVICES", "eth0",
                *map(str, extra), *tail]
    raise ValueError(f"unknown MPI implementation {impl!r}")


def sockmap(topo, hosts):
    """RACKS_MPI_SOCKMAP value: 'NETNS=SOCKET ...' of each host's rackd."""
    pairs = []
    for h in dict.fromkeys(hosts):
        ns = topo.ns(h)
        if ns.rackds:
            pairs.append(f"{ns.name}={ns.rackds[-1].sock}")
    return " ".join(pairs)


def environment(impl, topo, hosts):
    hosts = list(dict.fromkeys(hosts))
    env = dict(os.environ, RACKS_MPI_NSMAP=nsmap(topo, hosts),
               RACKS_MPI_SOCKMAP=sockmap(topo, hosts))
    if impl == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


class Job:
    """A running launcher (``proc``, a Popen with text stdout/stderr pipes;
    mpirun's own stdout carries the ranks' output unless a wrapper such as
    rankwrap diverts it)."""

    def __init__(self, impl, proc, argv, hosts, netns, wrapdir=None):
        self.started = time.monotonic()
        self.pids = {}                # {rank: pid}, once ready()
        self.impl = impl
        self.proc = proc
        self.argv = argv
        self.hosts = hosts            # test-bed host names, rank i on hosts[i]
        self.netns = netns            # their namespace names, same order
        self.wrapdir = wrapdir        # rankwrap's DIR, if used

    def ready(self, timeout=30):
        """Wait until every rank printed its ready line; return
        {rank: pid}. Needs a wrapper that writes DIR/rankR.out (rankwrap)
        or none: without one, the lines are read from mpirun's stdout."""
        n, pids = len(self.hosts), {}
        deadline = time.monotonic() + timeout
        while len(pids) < n:
            if self.proc.poll() is not None:
                rc, out, err = self.wait(5)
                raise MpiError(f"{self.impl} job exited {rc} before all ranks "
                               f"were ready:\n{out[-2000:]}\n{err[-2000:]}")
            if time.monotonic() > deadline:
                raise MpiError(f"ranks ready after {timeout}s: {sorted(pids)} of {n}")
            if self.wrapdir:
                for r in range(n):
                    try:
                        m = READY.search((Path(self.wrapdir) / f"rank{r}.out").read_text())
                    except FileNotFoundError:
                        continue
                    if m:
                        pids[r] = int(m[2])
                time.sleep(0.05)
            else:
                line = _read_line(self.proc, deadline - time.monotonic())
                m = READY.match(line or "")
                if m:
                    pids[int(m[1])] = int(m[2])
        self.pids = pids
        return pids

    def session_pid(self, rank):
        """The leader of rank's session, the root of the process tree to
        dump: rankwrap's sh (from its pid file), or rackckpt's agent
        (the session of the rank's pid, after ready())."""
        if self.wrapdir:
            return int((Path(self.wrapdir) / f"rank{rank}.pid").read_text())
        stat = Path(f"/proc/{self.pids[rank]}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[3])

    def wait(self, timeout):
        """(returncode, stdout, stderr); MpiError if still running."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise MpiError(f"{self.impl} job still running after {timeout}s: "
                           f"{' '.join(self.argv)}") from None
        return self.proc.returncode, out, err

    def check(self, rc, out, err):
        """Raise MpiError unless the job exited 0 and every rank said ok;
        return {rank: iterations}."""
        done = {int(r): int(n) for r, n in DONE.findall(out)}
        n = len(self.hosts)
        if rc != 0 or sorted(done) != list(range(n)) or len(set(done.values())) != 1:
            raise MpiError(f"{self.impl} job exited {rc}, ranks ok: {done}\n"
                           f"--- stdout ---\n{out[-4000:]}\n--- stderr ---\n{err[-4000:]}")
        return done

    def kill(self, grace=3.0):
        """Stop the job and everything it left behind: SIGTERM the
        launcher (it takes its daemons and ranks down), then SIGKILL any
        process still running inside the job's namespaces that is one of
        its daemons, wrappers or ranks (orted daemonizes, rankwrap's
        sessions are detached: the test-bed does not track them).
        Returns the pids killed that way."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        deadline = time.monotonic() + grace
        while leftovers(self.netns) and time.monotonic() < deadline:
            time.sleep(0.1)
        killed = leftovers(self.netns)
        for pid in killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.impl == "openmpi":       # a killed mpirun leaves its session dir
            shutil.rmtree(f"/tmp/ompi.{os.uname().nodename}.{os.getuid()}/"
                          f"pid.{self.proc.pid}", ignore_errors=True)
        return killed


JOB_COMMS = ("orted", "hydra_pmi_proxy", "ring-openmpi", "ring-mpich", "rankwrap",
             "rackckpt")


def _netns_inode(name):
    try:
        return os.stat(f"/run/netns/{name}").st_ino
    except FileNotFoundError:
        return None


def leftovers(netns):
    """pids of MPI daemons, ranks and their wrappers (by comm) whose
    network namespace is one of netns (names)."""
    inodes = {i for i in map(_netns_inode, netns) if i}
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            if comm == "sh":        # rankwrap's session leader: sh -c ... rankwrap
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                if b"rankwrap" not in argv[3:4]:
                    continue
            elif comm not in JOB_COMMS:
                continue
            if os.stat(f"/proc/{entry}/ns/net").st_ino in inodes:
                pids.append(int(entry))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return pids


def _read_line(proc, timeout):
    fd = proc.stdout.fileno()
    line = bytearray()
    deadline = time.monotonic() + max(timeout, 0)
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        byte = os.read(fd, 1)
        if not byte:
            return None
        line += byte
    return line.decode(errors="replace").rstrip("\n")


def start_ready(topo, hosts, tries=2, timeout=30, say=print, **kwargs):
    """start() and ready(), with the job started once more if its ranks
    never all report ready: Open MPI 4.1.4's orted is killed by SIGSEGV at
    start-up in about 1 of 20 jobs here, before any TCP connection exists,
    and mpirun then waits silently (NOTES.md section 8). A job that starts
    is never repeated. Returns (job, {rank: pid}); the job to kill() in a
    finally, as with start(). say() reports each retry."""
    impl = kwargs.get("impl", "openmpi")
    for attempt in range(1, tries + 1):
        job = start(topo, hosts, **kwargs)
        try:
            return job, job.ready(timeout=timeout)
        except MpiError as e:
            job.kill()
            if attempt == tries:
                raise MpiError(f"{impl} job: ranks never all ready "
                               f"in {tries} starts; last: {e}") from None
            say(f"mpijob: {impl} job not ready ({e}); killed and "
                f"started once more (start {attempt + 1} of {tries})")


def start(topo, hosts, seconds=30, impl="openmpi", launcher="r", args=(),
          wrapper=None, wrapdir=None, extra=(), program=None, env=None,
          via_rackckpt=False, ckpt_dir=None, nodes=(), binary=RACKCKPT):
    """Start ring (SECONDS, then args) with one rank on each of hosts
    (test-bed names, rank i on hosts[i]); the launcher runs in namespace
    ``launcher`` (R by default). Every rank runs under ``wrapper`` (an
    argv prefix; by default rackckpt_run(), which can move it; ``()`` for
    none), or with wrapdir under ``rankwrap WRAPDIR`` (CRIU-dumpable in
    place; ranks' output in WRAPDIR). ``env`` adds to the launcher's
    environment. Returns a Job; the launcher's process is tracked by the
    topology, but its daemons are not: end with ``job.kill()`` (e.g. in
    a finally) before teardown."""
    program = program or build_ring(impl)
    if wrapper is None:
        wrapper = rackckpt_run()
    addrs = [topo.addr[h]["v4"] for h in hosts]
    if wrapdir is not None:
        wrapper = [RANKWRAP, wrapdir]
        Path(wrapdir).mkdir(parents=True, exist_ok=True)
        for old in Path(wrapdir).glob("rank*.*"):     # an earlier job's
            old.unlink()
    launcher_addr = None
    if impl == "mpich":
        # R's side of the first host's subnet: hosts are .2, R is .1
        launcher_addr = (str(ipaddress.ip_address(addrs[0]) - 1) if launcher == "r"
                         else topo.addr[launcher]["v4"])
    if via_rackckpt:
        argv = rackckpt_mpirun(addrs, program, [seconds, *args], ckpt_dir,
                               extra, binary)
    else:
        argv = command(impl, addrs, program, [seconds, *args], wrapper,
                       launcher_addr, extra)
    # The hosts ranks may move to are in the maps too, and theirs are
    # the namespaces kill() searches.
    everywhere = [*hosts, *nodes]
    proc = topo.ns(launcher).popen(argv, nsenter=True,
                                   env={**environment(impl, topo, everywhere),
                                        **(env or {})},
                                   stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    return Job(impl, proc, argv, list(hosts),
               list(dict.fromkeys(topo.ns(h).name for h in everywhere)),
               wrapdir)
