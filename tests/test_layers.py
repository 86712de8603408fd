"""The layer check (tests/layers.py, `make check-layers`) passes on the
tree and fails, naming the edge, on a copy of it with a call upward or
a cycle between two modules of one folder: a check that cannot fail
would prove nothing."""

import shutil
import subprocess

import pytest

import testbed

LAYERS = testbed.REPO / "tests" / "layers.py"


def layers(*args):
    return subprocess.run([testbed.PYTHON, str(LAYERS), *map(str, args)],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def tree(tmp_path):
    for d in ("common", "edp", "nft", "rackd", "checkpoint", "bpf"):
        shutil.copytree(testbed.REPO / d, tmp_path / d)
    return tmp_path


def add_call(path, call):
    """Append a function that calls CALL to the C file at PATH."""
    path.write_text(path.read_text() +
                    f"\nvoid layers_test_probe(void);\n"
                    f"void layers_test_probe(void)\n{{\n\t{call};\n}}\n")


def test_the_tree_is_layered():
    proc = layers()
    assert proc.returncode == 0, proc.stderr
    for program in ("rackd", "rackckpt"):
        assert f"layers: {program}: " in proc.stdout
        assert "none upward, no cycle" in proc.stdout


def test_the_copy_passes_before_it_is_changed(tree):
    """The positive control of the two below."""
    proc = layers("--root", tree)
    assert proc.returncode == 0, proc.stderr


def test_an_upward_call_in_rackckpt_fails(tree):
    add_call(tree / "checkpoint/base/util.c", "wrapper_run(0, 0, 0, 0, 0)")
    proc = layers("--root", tree)
    assert proc.returncode == 1
    assert ("upward: checkpoint/base/util (base) -> checkpoint/relay/wrapper "
            "(relay): wrapper_run()") in proc.stderr, proc.stderr


def test_a_cycle_between_modules_of_one_folder_fails(tree):
    """agent.c uses pump.c; pump.c calling agent_dial() closes a cycle."""
    add_call(tree / "checkpoint/relay/pump.c", "agent_dial(0)")
    proc = layers("--root", tree)
    assert proc.returncode == 1
    assert "cycle between modules: checkpoint/relay/agent <-> " \
        "checkpoint/relay/pump" in proc.stderr, proc.stderr


def test_an_include_of_another_programs_header_fails(tree):
    path = tree / "checkpoint/state/image.c"
    path.write_text('#include "conn.h"\n' + path.read_text())
    proc = layers("--root", tree)
    assert proc.returncode == 1
    assert 'checkpoint/state/image.c: #include "conn.h" is no header ' \
        "of this program's layers" in proc.stderr, proc.stderr
