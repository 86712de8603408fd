"""pytest glue for the racks namespace test-bed (see testbed.py).

Fixtures:
    topo          a fresh A -- R -- B Topology, torn down after the test
    topo_factory  call it to build more topologies in one test

Every test is skipped when not run as root; a missing program ends the run
(packaging/deps.sh must install it). When a test fails, the log of
every rackd it started is attached to the report.

Parallel runs (pytest-xdist; make check runs ``-n 4 --dist loadgroup``):
every test owns its namespaces (named after its worker's pid), addresses
and ports live inside them, files go to temp dirs of its own. What a test
shares is the CPU, and for some, the machine. A test says which with one
marker (tests/README.md, "Sharing the machine"):

    @pytest.mark.bulk    it loads the CPU (full-speed transfers, hundreds
                         of connections at once, sanitizer builds): one
                         at a time, never beside a timing test
    @pytest.mark.timing  it asserts durations, rates or counts of timed
                         events ("within a second", heartbeats): never
                         beside a bulk test
    @pytest.mark.alone   nothing else may run meanwhile (a benchmark
                         figure; anything machine-wide, e.g. a BPF program
                         at the cgroup v2 root, which sees every
                         namespace's sockets)

Unmarked tests run beside anything but an `alone` one. File locks in a
directory of the run (RACKS_TEST_LOCKS) enforce this in every worker,
writers first (a waiting `alone` or `bulk` test is not starved); under
--dist loadgroup the bulk and the timing tests each form one group (one
worker runs them in turn, first in the run: they are the longest
chains), and the `alone` ones run last. A plain `pytest` (one process)
runs everything in file order, which trivially honours all three.
"""

import fcntl
import os
import shutil
import tempfile
from pathlib import Path

import pytest

import testbed

TOPOLOGIES = pytest.StashKey[list]()
_MADE_LOCKS = pytest.StashKey[str]()
LOCKS_ENV = "RACKS_TEST_LOCKS"
SHARING = ("alone", "bulk", "timing")
# What each kind of test holds while it runs, in this order: (lock,
# exclusive). "all": alone excludes everything; "cpu": bulk excludes
# timing and other bulk tests.
HOLDS = {
    "alone": (("all", True),),
    "bulk": (("cpu", True), ("all", False)),
    "timing": (("cpu", False), ("all", False)),
    None: (("all", False),),
}


def _why_unusable():
    if os.geteuid() != 0:
        return "racks namespace tests need root (ip netns, veth, nft): run them as root"
    return None


def pytest_configure(config):
    # Missing programs are a defect of the install step, never a reason to
    # skip: packaging/deps.sh installs them (make check runs it first).
    missing = [tool for tool in ("ip", "nft", "sysctl") if shutil.which(tool) is None]
    if missing and os.geteuid() == 0:
        pytest.exit(f"racks tests need {', '.join(missing)}: packaging/deps.sh "
                    f"must install them", returncode=2)
    # The controller (or a plain run) makes the run's lock directory; xdist
    # workers, started later, inherit it through the environment.
    if not hasattr(config, "workerinput") and LOCKS_ENV not in os.environ:
        os.environ[LOCKS_ENV] = tempfile.mkdtemp(prefix="racks-pytest-locks-")
        config.stash[_MADE_LOCKS] = os.environ[LOCKS_ENV]


def pytest_unconfigure(config):
    made = config.stash.get(_MADE_LOCKS, None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(LOCKS_ENV, None)


def sharing(item):
    """The test's kind: 'alone', 'bulk', 'timing' or None."""
    kinds = [k for k in SHARING if item.get_closest_marker(k)]
    if len(kinds) > 1:
        raise pytest.UsageError(f"{item.nodeid}: marked {' and '.join(kinds)}; "
                                f"one of {', '.join(SHARING)} at most "
                                f"(a bulk test with a timed figure is alone)")
    return kinds[0] if kinds else None


def _grouped(config):
    """Whether this is an xdist worker of a --dist loadgroup run (xdist
    sets the workers' own dist option to "no", and loadgroup instead)."""
    return hasattr(config, "workerinput") and \
        bool(getattr(config.option, "loadgroup", False))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    reason = _why_unusable()
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            item.add_marker(skip)
    kinds = {item.nodeid: sharing(item) for item in items}
    if not _grouped(config):
        return
    # One group each for the bulk and the timing tests (xdist's loadgroup
    # hands a group to one worker), at the front: each is a long chain.
    # The alone tests last, after everything that could run beside them.
    for item in items:
        if kinds[item.nodeid]:
            item.add_marker(pytest.mark.xdist_group(kinds[item.nodeid]))
    order = {"bulk": 0, "timing": 1, None: 2, "alone": 3}
    items.sort(key=lambda item: order[kinds[item.nodeid]])


class _Locks:
    """flock()s in the run's directory, taken writers first: whoever waits
    for a lock exclusively holds its turnstile meanwhile, so no new
    shared holder gets past it."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.fds = {}

    def _fd(self, name):
        if name not in self.fds:
            self.fds[name] = os.open(self.dir / name, os.O_RDWR | os.O_CREAT,
                                     0o600)
        return self.fds[name]

    def take(self, name, exclusive):
        turnstile = self._fd(f"{name}.turnstile")
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._fd(name),
                        fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)

    def drop(self, name):
        fcntl.flock(self._fd(name), fcntl.LOCK_UN)


_locks = None


def _lock_dir(config):
    """The run's lock directory: the controller's (inherited), else one
    named after xdist's run id, else this process's own."""
    if LOCKS_ENV in os.environ:
        return os.environ[LOCKS_ENV]
    run = getattr(config, "workerinput", {}).get("testrunuid")
    path = Path(tempfile.gettempdir()) / f"racks-pytest-locks-{run or os.getpid()}"
    path.mkdir(exist_ok=True)
    return path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Hold the test's locks (HOLDS) over its setup, call and teardown."""
    global _locks
    if _locks is None:
        _locks = _Locks(_lock_dir(item.config))
    held = []
    try:
        for name, exclusive in HOLDS[sharing(item)]:
            _locks.take(name, exclusive)
            held.append(name)
        yield
    finally:
        for name in reversed(held):
            _locks.drop(name)


def pytest_sessionstart(session):
    if _why_unusable() is None:
        testbed.remove_stale_namespaces()


@pytest.fixture
def topo_factory(request):
    """Build A -- R -- B topologies on demand: ``t = topo_factory()``.

    All are closed at teardown, whatever the test's outcome.
    """
    made = request.node.stash.setdefault(TOPOLOGIES, [])

    def make(**kwargs):
        topo = testbed.Topology.create(**kwargs)
        made.append(topo)
        return topo

    yield make
    for topo in reversed(made):
        topo.close()


@pytest.fixture
def topo(topo_factory):
    """A fresh A -- R -- B topology (diagram in testbed.py)."""
    return topo_factory()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach every rackd log of a failed test to its report."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for topo in item.stash.get(TOPOLOGIES, []):
        for rackd in topo.rackds:
            report.sections.append(
                (f"rackd log: {rackd.ns.name} pid {rackd.pid} ({report.when})",
                 rackd.log() or "(empty)"))
