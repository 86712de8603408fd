"""`make install` honours DESTDIR and PREFIX and installs what the man
pages describe."""

import subprocess

import testbed


def test_make_install_into_destdir(tmp_path):
    testbed.make("install", f"DESTDIR={tmp_path}", "PREFIX=/usr",
                 capture_output=True)
    for path, mode in [("usr/sbin/rackd", 0o755), ("usr/sbin/rackctl", 0o755),
                       ("usr/share/man/man8/rackd.8", 0o644),
                       ("usr/share/man/man8/rackctl.8", 0o644),
                       ("usr/share/man/man5/racks.conf.5", 0o644)]:
        f = tmp_path / path
        assert f.is_file(), path
        assert f.stat().st_mode & 0o777 == mode, path
    proc = subprocess.run([str(tmp_path / "usr/sbin/rackd"), "-V"],
                          capture_output=True, text=True, check=True)
    assert proc.stdout.startswith("rackd ")
