"""pytest glue for the racks namespace test-bed (see testbed.py).

Fixtures:
    topo          a fresh A -- R -- B Topology, torn down after the test
    topo_factory  call it to build more topologies in one test

Every test is skipped when not run as root; a missing program ends the run
(packaging/deps.sh must install it). When a test fails, the log of
every rackd it started is attached to the report.
"""

import os
import shutil

import pytest

import testbed

TOPOLOGIES = pytest.StashKey[list]()


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


def pytest_collection_modifyitems(config, items):
    reason = _why_unusable()
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            item.add_marker(skip)


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
