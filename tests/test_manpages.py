"""The manual pages match the code: every configuration key, every rackctl
command, every rackd option and every status counter is documented, and
the pages are free of mandoc warnings."""

import re
import subprocess

import pytest

import testbed

MAN = testbed.REPO / "man"


def items(page, macro):
    """Names of `.It Cm NAME` / `.It Fl X` entries in a page, those after
    a comma of the same entry too (`.It Cm a , Cm b`)."""
    text = (MAN / page).read_text()
    names = set()
    for line in re.findall(rf"^\.It {macro} .*$", text, re.M):
        names |= set(re.findall(rf"(?:^\.It|,) {macro} (\S+)", line))
    return names


def source(path):
    return (testbed.REPO / path).read_text()


def test_every_config_key_is_documented():
    text = source("rackd/core/config.c")
    keys = set(re.findall(r'\{ \.name = "(\w+)", \.set = set_\w+ \}', text))
    keys |= set(re.findall(r'^\tDURATION_KEY\((\w+), \d+\),$', text, re.M))
    assert len(keys) >= 15
    documented = items("racks.conf.5", "Cm")
    assert keys <= documented, f"undocumented keys: {keys - documented}"


def test_documented_defaults_match_rackd():
    dump = subprocess.run([testbed.default_rackd(), "-n", "-c", "/nonexistent"],
                          capture_output=True, text=True, check=True).stdout
    page = (MAN / "racks.conf.5").read_text()
    for line in dump.splitlines():
        key, value = (x.strip() for x in line.split("="))
        assert value.lstrip("0x") in page or value in page, (key, value)


def test_every_rackctl_command_is_documented():
    commands = set(re.findall(r'^\t\{ "(\w+)", "[^"]*", "',
                              source("rackctl/rackctl.c"), re.M))
    assert {"status", "list", "show", "reload", "help"} <= commands
    assert commands <= items("rackctl.8", "Cm")


def test_every_rackd_option_is_documented():
    main = source("rackd/main.c")
    optstring = re.search(r'getopt_long\(argc, argv, ":([^"]+)",', main).group(1)
    letters = set(optstring.replace(":", ""))
    assert letters <= items("rackd.8", "Fl")
    longs = set(re.findall(r'\{ "([\w-]+)", (?:no|required)_argument,', main))
    assert {"help", "host-key", "init-host-key", "rotate-host-key"} <= longs
    assert {"\\-" + name for name in longs} <= items("rackd.8", "Fl")


def test_every_status_counter_is_documented():
    """Every key of status, list, show (ctl_cmds.c) and of host, hosts
    (ctl_hosts.c) is described in rackctl.8."""
    keys = set()
    for path in ("rackd/ctl/ctl_cmds.c", "rackd/ctl/ctl_hosts.c"):
        keys |= set(re.findall(r'put_u64\(out, "(\w+)"', source(path)))
        keys |= set(re.findall(r'proto_put\(out, "(\w+)"', source(path)))
    keys.discard("record")      # protocol framing, described in rackd.8
    # The per-reason malformed counters are generated from packet.c's names.
    keys |= {f"malformed_{n}" for n in re.findall(
        r'\] = "(\w+)",', source("rackd/io/packet.c")) if n != "ok"}
    page = (MAN / "rackctl.8").read_text()
    missing = [k for k in keys if f"Li {k}" not in page]
    assert not missing, f"keys rackctl.8 does not describe: {missing}"


def test_every_migration_reply_key_is_documented():
    """rackckpt's commands (rackd/ctl/ctl_migrate.c) reply with keys that
    rackd.8's MIGRATION section names."""
    keys = set(re.findall(r'proto_put\(out, "(\w+)"',
                          source("rackd/ctl/ctl_migrate.c")))
    keys.discard("record")
    page = (MAN / "rackd.8").read_text()
    section = page[page.index(".Sh MIGRATION"):page.index(".Sh IF RACKD DIES")]
    missing = [k for k in keys if f"Ql {k}" not in section]
    assert keys and not missing, f"keys rackd.8 does not describe: {missing}"


@pytest.mark.parametrize("page", ["rackd.8", "rackctl.8", "rackckpt.8", "racks.conf.5"])
def test_page_is_lint_clean(page):
    testbed.need_tools("mandoc")
    proc = subprocess.run(["mandoc", "-T", "lint", "-W", "warning",
                           str(MAN / page)], capture_output=True, text=True)
    assert proc.stdout == "" and proc.returncode == 0, proc.stdout
