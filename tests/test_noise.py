"""edp/noise.c against an independent Noise implementation.

tests/tools/noise_peer (build/tests/noise_peer, edp/noise.c under the
sanitizers) plays one end of Noise_XX_25519_ChaChaPoly_BLAKE2b over its
stdin and stdout; dissononce (Debian's python3-dissononce, on the
cryptography package's X25519, ChaCha20-Poly1305 and HMAC-BLAKE2b) plays
the other. Both roles each way, with payloads in every message: both ends
must read the same payloads and end with the same handshake hash, split
keys and each other's static keys; a message of dissononce's with one
flipped byte must be refused by the C end. No namespaces and no root of
their own (conftest.py still skips every test when not root).
"""

import hashlib
import os
import select
import subprocess
import time

import pytest

import testbed

try:
    from dissononce.cipher.chachapoly import ChaChaPolyCipher
    from dissononce.dh.x25519.private import PrivateKey
    from dissononce.dh.x25519.x25519 import X25519DH
    from dissononce.extras.dh.dangerous.dh_nogen import NoGenDH
    from dissononce.hash.blake2b import Blake2bHash
    from dissononce.processing.handshakepatterns.interactive.XX import \
        XXHandshakePattern
    from dissononce.processing.impl.cipherstate import CipherState
    from dissononce.processing.impl.handshakestate import HandshakeState
    from dissononce.processing.impl.symmetricstate import SymmetricState
    MISSING = None
except ImportError as e:
    MISSING = str(e)

PEER = testbed.REPO / "build" / "tests" / "noise_peer"
PROTOCOL = "Noise_XX_25519_ChaChaPoly_BLAKE2b"
TIMEOUT = 20


@pytest.fixture(scope="module", autouse=True)
def built():
    testbed.make("build/tests/noise_peer", timeout=120)


def need_dissononce():
    # Never a skip: packaging/deps.sh installs it.
    if MISSING:
        pytest.fail(f"dissononce missing ({MISSING}): packaging/deps.sh "
                    f"must install python3-dissononce", pytrace=False)


def secret(seed, what):
    """A reproducible 32-byte secret for SEED and WHAT."""
    return hashlib.blake2b(f"{seed}/{what}".encode(), digest_size=32).digest()


def public(sk):
    return X25519DH().generate_keypair(PrivateKey(sk)).public.data


def python_end(initiator, s_sk, e_sk, prologue):
    """dissononce's handshake state, its ephemeral fixed to E_SK."""
    need_dissononce()
    dh = X25519DH()
    hs = HandshakeState(
        SymmetricState(CipherState(ChaChaPolyCipher()), Blake2bHash()),
        NoGenDH(dh, PrivateKey(e_sk)))
    hs.initialize(XXHandshakePattern(), initiator, prologue,
                  s=dh.generate_keypair(PrivateKey(s_sk)))
    assert hs.protocol_name == PROTOCOL
    return hs


class CEnd:
    """noise_peer as a child: lines out as (word, value), hex lines in."""

    def __init__(self, role, s_sk, e_sk, prologue, payloads):
        self.proc = subprocess.Popen(
            [str(PEER), role, s_sk.hex(), e_sk.hex(), prologue.hex(),
             *(p.hex() for p in payloads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        self.buf = b""

    def line(self):
        deadline = time.monotonic() + TIMEOUT
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0 and select.select([fd], [], [], left)[0], \
                f"noise_peer silent for {TIMEOUT} s"
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError(f"noise_peer ended early: {self.finish()}")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        word, _, value = line.decode().partition(" ")
        return word, value

    def expect(self, word):
        got, value = self.line()
        assert got == word, f"noise_peer said {got} {value}, not {word}"
        return bytes.fromhex(value)

    def send(self, msg):
        self.proc.stdin.write(msg.hex().encode() + b"\n")
        self.proc.stdin.flush()

    def finish(self):
        """Exit status and stderr, once it ended (killed if it hangs)."""
        try:
            _, err = self.proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, err.decode()


def run_handshake(c_role, seed, payloads, prologue):
    """A whole handshake, the C end in C_ROLE, dissononce the other;
    PAYLOADS[i] travels in message i. Returns what each end ended with."""
    c_sk, c_e = secret(seed, "c static"), secret(seed, "c ephemeral")
    py_sk, py_e = secret(seed, "py static"), secret(seed, "py ephemeral")
    c_initiator = c_role == "initiator"
    py = python_end(not c_initiator, py_sk, py_e, prologue)
    c_writes = [payloads[i] for i in range(3) if (i % 2 == 0) == c_initiator]
    c = CEnd(c_role, c_sk, c_e, prologue, c_writes)
    split = None
    try:
        for i in range(3):
            if (i % 2 == 0) == c_initiator:
                got = bytearray()
                split = py.read_message(c.expect("msg"), got) or split
                assert bytes(got) == payloads[i], f"message {i}'s payload"
            else:
                msg = bytearray()
                split = py.write_message(payloads[i], msg) or split
                assert len(msg) == 32 * (i < 2) + 48 * (i > 0) + \
                    len(payloads[i]) + 16 * (i > 0)
                c.send(bytes(msg))
                assert c.expect("payload") == payloads[i], \
                    f"message {i}'s payload"
        c_end = {w: c.expect(w) for w in ("remote", "h", "k1", "k2")}
        assert c.finish() == (0, "")
    finally:
        if c.proc.poll() is None:
            c.proc.kill()
            c.proc.wait()
    assert split is not None, "dissononce did not finish the handshake"
    py_end = {"remote": py.rs.data,
              "h": py.symmetricstate.get_handshake_hash(),
              "k1": split[0]._key, "k2": split[1]._key}
    return c_end, py_end, public(c_sk), public(py_sk)


@pytest.mark.parametrize("c_role", ["initiator", "responder"])
@pytest.mark.parametrize("seed,sizes", [(1, (3, 4, 5)), (2, (1, 700, 1)),
                                        (3, (1000, 1, 60000))])
def test_handshake_agrees(c_role, seed, sizes):
    payloads = [secret(seed, f"payload {i}") * (n // 32 + 1)
                for i, n in enumerate(sizes)]
    payloads = [p[:n] for p, n in zip(payloads, sizes)]
    c_end, py_end, c_pk, py_pk = run_handshake(c_role, seed, payloads,
                                               b"racks test %d" % seed)
    assert c_end["h"] == py_end["h"]
    assert len(c_end["h"]) == 64
    assert (c_end["k1"], c_end["k2"]) == (py_end["k1"], py_end["k2"])
    assert len(c_end["k1"]) == 32 and c_end["k1"] != c_end["k2"]
    assert c_end["remote"] == py_pk
    assert py_end["remote"] == c_pk


def test_prologue_must_match():
    """The same keys with another prologue at one end: dissononce
    refuses the C responder's message 1 (h differs)."""
    need_dissononce()
    from dissononce.exceptions.decrypt import DecryptFailedException
    py = python_end(True, secret(9, "py static"), secret(9, "py ephemeral"),
                    b"one prologue")
    c = CEnd("responder", secret(9, "c static"), secret(9, "c ephemeral"),
             b"another prologue", [b"x"])
    try:
        msg = bytearray()
        py.write_message(b"hello", msg)
        c.send(bytes(msg))
        assert c.expect("payload") == b"hello"
        with pytest.raises(DecryptFailedException):
            py.read_message(c.expect("msg"), bytearray())
    finally:
        c.proc.kill()
        c.proc.wait()


@pytest.mark.parametrize("c_role", ["initiator", "responder"])
def test_flipped_byte_refused(c_role):
    """dissononce's message that the C end reads (1 for a C initiator,
    2 for a C responder) with one bit flipped, at its first, a middle
    and its last byte: the C end says EBADMSG and exits 1. The same
    message unflipped is the positive control: it is read."""
    c_initiator = c_role == "initiator"
    target = 1 if c_initiator else 2
    payloads = [b"first", b"second", b"third"]
    size = 32 * (target < 2) + 48 + len(payloads[target]) + 16
    for flip in (None, 0, size // 2, size - 1):
        py = python_end(not c_initiator, secret(5, "py static"),
                        secret(5, "py ephemeral"), b"")
        c_writes = [payloads[i] for i in range(3)
                    if (i % 2 == 0) == c_initiator]
        c = CEnd(c_role, secret(5, "c static"), secret(5, "c ephemeral"),
                 b"", c_writes)
        try:
            for i in range(target):
                if (i % 2 == 0) == c_initiator:
                    py.read_message(c.expect("msg"), bytearray())
                else:
                    msg = bytearray()
                    py.write_message(payloads[i], msg)
                    c.send(bytes(msg))
                    assert c.expect("payload") == payloads[i]
            msg = bytearray()
            py.write_message(payloads[target], msg)
            assert len(msg) == size
            if flip is not None:
                msg[flip] ^= 0x10
            c.send(bytes(msg))
            word, value = c.line()
            if flip is None:
                assert (word, bytes.fromhex(value)) == \
                    ("payload", payloads[target])
            else:
                assert (word, value) == ("error", "EBADMSG"), \
                    f"flipped byte {flip} of message {target}"
                assert c.finish() == (1, "")
        finally:
            if c.proc.poll() is None:
                c.proc.kill()
                c.proc.wait()
