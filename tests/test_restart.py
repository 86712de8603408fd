"""rackd restarted under running connections: the state file.

A rackd writes its managed connections (keys, counters, endpoints,
suspension) to its state file; the next one, started with the same file,
takes them over: connected ones stay managed (a later cut is survived),
suspended ones are still reconnected, spliced ones keep their splice,
whose table the stopped rackd left in place. A rackd killed or stopped
hard leaves plain TCP running, and its successor replaces the old table.
Bad state files and unwritable state directories are reported, and lose
nothing else.

Topology: the standard A -- R -- B (see testbed.py), rackd on A and B::

    A (rackd, restarted) ---- R ---- B (rackd)
"""

import json
import signal
import time

import racks
import testbed
from testbed import start_xfer_client, start_xfer_server

MB = 1024 * 1024
PORT = 5001
FAST = "suspend_after = 1s\n"


CONNECT = """
import socket, sys
socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10).close()
"""


def transfer(topo, size, rate=4 * MB, timeout=120):
    """A paced transfer both ways from A to B, set up and managed."""
    server = start_xfer_server(topo.b, PORT, send=size, rate=rate,
                               timeout=timeout)
    client = start_xfer_client(topo.a, topo.addr["b"]["v4"], PORT, size,
                               recv=True, rate=rate, announce=True,
                               timeout=timeout)
    client.connected()
    return server, client


def managed_transfer(topo, size, rate=4 * MB, config=FAST):
    """rackd on A and B, and a managed transfer between them; A's rackd,
    the transfer's server and client."""
    ra = topo.start_rackd("a", config=config)
    topo.start_rackd("b", config=config)
    server, client = transfer(topo, size, rate=rate)
    managed(ra)
    return ra, server, client


def managed(rackd):
    conns = racks.wait_states(rackd, "connected", remote_port=PORT)
    assert len(conns) == 1
    return rackd.ctl_json("show", str(conns[0]["id"]))


def restart(rackd):
    """TERM, then the same command line: the same state file."""
    assert rackd.stop() == 0
    rackd.start()


def wait_state(rackd, state, timeout):
    return racks.wait_states(rackd, state, timeout, remote_port=PORT)


def test_restart_in_the_middle_of_a_transfer_keeps_it_managed(topo):
    ra = topo.start_rackd("a", config=FAST)
    rb = topo.start_rackd("b", config=FAST)
    size = 24 * MB
    server, client = transfer(topo, size)
    before = managed(ra)
    time.sleep(1)
    restart(ra)
    st = ra.status()
    assert st["state_restored"] == 1 and st["state_load_failed"] == 0, st
    after = managed(ra)
    # The same connection, key and all: the fingerprint is the key's.
    for field in ("local", "remote", "key_fingerprint"):
        assert after[field] == before[field], (field, before, after)
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    # Still managed, not merely listed: a cut is detected and survived.
    topo.cut_silent("b")
    wait_state(ra, "suspended", 5)
    time.sleep(2)
    topo.restore_silent("b")
    wait_state(ra, "connected", 10)
    racks.check_both_ways(server, client, size)
    assert ra.status()["resumes"] >= 1 and rb.status()["resumes"] >= 1


def test_restart_in_the_middle_of_a_suspension_still_reconnects(topo):
    size = 16 * MB
    ra, server, client = managed_transfer(topo, size)
    time.sleep(1)
    topo.cut_silent("b")
    wait_state(ra, "suspended", 5)
    restart(ra)
    st = ra.status()
    assert st["state_restored"] == 1, st
    # Taken over suspended, its socket held again, and still so.
    assert [c["state"] for c in ra.connections()] == ["suspended"]
    assert "@held4" in testbed.nft(topo.a, "list chain inet racks output")
    time.sleep(2)
    assert [c["state"] for c in ra.connections()] == ["suspended"]
    topo.restore_silent("b")
    wait_state(ra, "connected", 10)
    racks.check_both_ways(server, client, size)


# Every RST A's kernel sends (the output hook sees those it answers
# segments without a socket with too).
RST_COUNTER = """table inet rstcount {
    chain out {
        type filter hook output priority 0; policy accept;
        tcp flags & rst == rst counter
    }
}
"""


def test_spliced_connection_survives_a_restart_through_the_kept_table(topo):
    """Stopped right after the move, with its reconnection possibly still
    on the way: the kept table only rewrites, so B's answer, heartbeats
    and whatever else of racks' arrives meanwhile reach A's socket as
    segments of its flow (no queue nobody reads lets them by unrewritten
    to draw RSTs: the one answering the reconnection SYN-ACK would carry
    B's expected sequence number exactly and reset B's socket)."""
    size = 24 * MB
    ra, server, client = managed_transfer(topo, size)
    rb = topo.b.rackds[-1]
    testbed.nft_file(topo.a, RST_COUNTER)
    racks.move_and_splice(topo, "a", ra)
    assert ra.stop() == 0
    sent = rb.status()["edp_msgs_out"]
    # While no rackd runs, the table keeps rewriting the spliced flow,
    # and diverts nothing.
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    assert "10.71." in testbed.nft(topo.a, "list map inet racks out4_laddr")
    # Every rule of prerouting rewrites the spliced flow (maps in4_*), and
    # none sends a packet anywhere (no jump, goto or queue: no way to the
    # diverting chains); output has no rule at all.
    prerouting = racks.chain_rules(topo.a, "prerouting")
    assert prerouting, "no splice rule kept"
    for rule in prerouting:
        assert not racks.verdicts_of(rule), rule
        assert "@in4_" in json.dumps(rule) or "@in6_" in json.dumps(rule), rule
    assert not [r for r in racks.chain_rules(topo.a, "splice_out")
                if racks.verdicts_of(r)]
    assert racks.chain_rules(topo.a, "output") == [], \
        testbed.nft(topo.a, "list chain inet racks output")
    time.sleep(1.5)
    # B kept talking to A (heartbeats, then its suspension's), and none
    # of it drew a RST.
    assert rb.status()["edp_msgs_out"] > sent
    counted = testbed.nft(topo.a, "list chain inet rstcount out")
    assert "counter packets 0 bytes 0" in counted, counted
    ra.start()
    st = ra.status()
    assert st["state_restored"] == 1 and st["spliced"] == 1, st
    conn = managed(ra)
    assert conn["splice"] == "kernel" and conn["local_address_kept"], conn
    racks.check_both_ways(server, client, size)


def test_sigkill_and_sigstop_leave_plain_tcp_and_one_table(topo):
    size = 24 * MB
    ra, server, client = managed_transfer(topo, size)
    time.sleep(0.5)
    # Stopped: the connection's data never goes through the queue, so it
    # keeps flowing; but a new handshake waits in the queue, which
    # fail-open does not release (the queue is far from full).
    ra.kill(signal.SIGSTOP)
    late = start_xfer_server(topo.b, PORT + 1)
    connecting = topo.a.popen([testbed.PYTHON, "-c", CONNECT,
                               topo.addr["b"]["v4"], str(PORT + 1)])
    time.sleep(1.5)
    assert connecting.poll() is None, "a handshake passed a stopped rackd"
    # The watchdog's remedy: kill it. The table stays, its queue bypassed:
    # the SYN's retransmission passes as plain TCP.
    ra.kill(signal.SIGKILL)
    ra.proc.wait(5)
    assert connecting.wait(10) == 0, connecting.stderr.read()
    testbed.terminate([late.proc])
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    ra.start()
    assert racks.racks_tables(topo.a) == ["table inet racks"]
    assert ra.status()["state_restored"] == 1
    racks.check_both_ways(server, client, size)


def test_corrupt_or_truncated_state_file_is_reported_and_ignored(topo):
    ra, server, client = managed_transfer(topo, 4 * MB, rate=8 * MB,
                                          config="")
    assert ra.stop() == 0
    good = ra.state.read_text()
    assert good.startswith("racks-state 1\nconn ") and \
        good.endswith("end 1\n"), good
    assert ra.state.stat().st_mode & 0o777 == 0o600
    bad_cases = {
        "truncated": good[:len(good) // 2],
        "no end line": good[:good.index("end 1")],
        "wrong count": good.replace("end 1", "end 2"),
        "bad key": good.replace(" key=", " key=zz"),
        "unknown field": good.replace(" dir=", " colour=blue dir="),
        "not a state file": "hello\n",
        "binary": "racks-state 1\n\0\0\0\n",
    }
    for what, text in bad_cases.items():
        ra.state.write_text(text)
        ra.start()
        st = ra.status()
        assert st["state_load_failed"] == 1 and st["state_restored"] == 0, \
            (what, st)
        assert "refused" in ra.log(), what
        bad = ra.state.with_name("state.bad")
        assert bad.read_text() == text, what
        bad.unlink()
        assert ra.stop() == 0
    racks.check_both_ways(server, client, 4 * MB)


def test_unwritable_state_directory_is_reported_and_nothing_else_changes(topo):
    ra = topo.start_rackd("a", config=FAST,
                          args=["-s", "/nonexistent-racks-dir/state"])
    topo.start_rackd("b", config=FAST)
    server, client = transfer(topo, 8 * MB)
    managed(ra)
    testbed.wait_until(lambda: ra.status()["state_write_errors"] >= 1, 5,
                       "a failed state write")
    log = ra.log()
    assert log.count("cannot be written") == 1, log
    # Managed as ever: a cut is survived.
    topo.cut_silent("b")
    wait_state(ra, "suspended", 5)
    topo.restore_silent("b")
    wait_state(ra, "connected", 10)
    racks.check_both_ways(server, client, 8 * MB)
