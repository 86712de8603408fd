"""packaging/build-criu.sh takes the Debian archive's address from the
machine's own apt configuration (one-line and deb822 sources, APT_CONFIG
honoured, the security archive left out) and fetches with apt's own
downloader, so that a site's mirror serves CRIU's source: a mirror in a
namespace of the test's own, holding the tarball at the archive's pool
path, is asked for it and serves it; one holding a corrupt copy is
refused (sha256)."""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import testbed

SCRIPT = testbed.REPO / "packaging" / "build-criu.sh"
TARBALL = "criu_4.2.1.orig.tar.xz"
CACHED = testbed.REPO / "build" / "criu-src" / TARBALL
POOL = f"pool/main/c/criu/{TARBALL}"
SHA256 = "29ec0ee09e296479fe7048c80980e8ef1d0684d0b0204c2b101dfea19f6725b9"


def apt_config(tmp_path, lines, parts=None):
    """An APT_CONFIG whose sources are LINES (sources.list) and PARTS
    ({name: text} in sources.list.d)."""
    d = tmp_path / "apt"
    (d / "parts").mkdir(parents=True)
    (d / "sources.list").write_text("".join(f"{l}\n" for l in lines))
    for name, text in (parts or {}).items():
        (d / "parts" / name).write_text(text)
    conf = d / "apt.conf"
    # No retries: the snapshot, out of a namespace's reach, fails at
    # once (5 s of name resolution, not 37 s).
    conf.write_text(f'Dir::Etc::sourcelist "{d}/sources.list";\n'
                    f'Dir::Etc::sourceparts "{d}/parts";\n'
                    'Acquire::Retries "0";\n')
    return conf


def urls(env):
    proc = subprocess.run([str(SCRIPT), "--print-urls"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_urls_come_from_apts_sources(tmp_path):
    conf = apt_config(tmp_path, [
        "deb http://mirror.example.org/debian bookworm main",
        "deb http://mirror.example.org/debian bookworm-updates main",
        "deb http://mirror.example.org/debian-security bookworm-security main",
    ], {"site.sources": "Types: deb\nURIs: http://deb822.example.net/debian/\n"
        "Suites: bookworm\nComponents: main\n"})
    assert urls({"APT_CONFIG": str(conf)}) == [
        f"http://mirror.example.org/debian/{POOL}",
        f"http://deb822.example.net/debian/{POOL}",
        "https://snapshot.debian.org/file/943aa42a53e9678fee0c8cb85c544afa2d331229"]
    # CRIU_URL still wins; without sources only the snapshot is left.
    assert urls({"APT_CONFIG": str(conf), "CRIU_URL": "http://x/y.tar.xz"}) \
        == ["http://x/y.tar.xz"]
    empty = apt_config(tmp_path / "empty", [])
    assert len(urls({"APT_CONFIG": str(empty)})) == 1


def test_this_machines_archive_is_the_first_url():
    """The positive control: this machine's own sources name an archive,
    and it is the one asked first."""
    proc = subprocess.run(["apt-get", "indextargets", "--no-release-info",
                           "--format", "$(REPO_URI)", "Identifier: Packages"],
                          capture_output=True, text=True, check=True)
    first = proc.stdout.split()[0].rstrip("/")
    assert urls({})[0] == f"{first}/{POOL}"


MIRROR = r"""
import http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):
        print("GET", self.path, flush=True)
http.server.ThreadingHTTPServer(("10.71.1.2", 8042), H).serve_forever()
"""


@pytest.fixture
def mirror(topo, tmp_path):
    """A Debian mirror at http://10.71.1.2:8042/debian in A's namespace,
    serving tmp_path/www; its GET lines are read from .proc."""
    if not CACHED.exists():
        pytest.fail(f"{CACHED} is missing (make deps fetches it)",
                    pytrace=False)
    www = tmp_path / "www"
    (www / "debian" / POOL).parent.mkdir(parents=True)
    server = topo.a.popen([testbed.PYTHON, "-u", "-c", MIRROR], cwd=www)
    testbed.wait_until(lambda: subprocess.run(
        topo.a.exec_prefix() + ["ss", "-ltn", "sport", "= :8042"],
        capture_output=True, text=True).stdout.count("LISTEN"), 10,
        "the mirror")
    return www, server


def fetch(topo, tmp_path, conf):
    src = tmp_path / "src"
    return subprocess.run(topo.a.exec_prefix() + [
        "env", f"APT_CONFIG={conf}", f"CRIU_SRC_DIR={src}", str(SCRIPT),
        "--fetch"], capture_output=True, text=True, timeout=120), src


def test_the_sites_mirror_serves_the_tarball(topo, tmp_path, mirror):
    www, server = mirror
    shutil.copy(CACHED, www / "debian" / POOL)
    conf = apt_config(tmp_path, ["deb http://10.71.1.2:8042/debian bookworm main"])
    proc, src = fetch(topo, tmp_path, conf)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"fetching http://10.71.1.2:8042/debian/{POOL}" in proc.stdout
    assert f"sha256 {SHA256} OK" in proc.stdout
    assert hashlib.sha256((src / TARBALL).read_bytes()).hexdigest() == SHA256
    server.terminate()
    assert f"GET /debian/{POOL}" in server.communicate(timeout=10)[0]


def test_a_corrupt_copy_on_the_mirror_is_refused(topo, tmp_path, mirror):
    www, server = mirror
    (www / "debian" / POOL).write_bytes(CACHED.read_bytes()[:-1] + b"x")
    conf = apt_config(tmp_path, ["deb http://10.71.1.2:8042/debian bookworm main"])
    proc, src = fetch(topo, tmp_path, conf)
    # Asked, refused; the snapshot is out of the namespace's reach.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"could not fetch {TARBALL} with sha256 {SHA256}" in proc.stderr
    assert not (src / TARBALL).exists()
    server.terminate()
    assert f"GET /debian/{POOL}" in server.communicate(timeout=10)[0]
