#!/usr/bin/env python3
"""impi-server driven by scripted raw-socket clients, good and hostile (IMPI.md §3).

usage: impi_server_test.py PATH/TO/impi-server CASE
Each case starts its own server on an ephemeral loopback port and checks its replies byte for
byte against IMPI.md's examples, what it logs, and its exit status. Every server is killed at
the end of its case whatever happens.
"""
import hashlib
import hmac
import os
import random
import tempfile
import socket
import struct
import subprocess
import sys
import time

SERVER = sys.argv[1]
AUTH, IMPI, COLL, DONE, FINI = (0x41555448, 0x494D5049, 0x434F4C4C, 0x444F4E45, 0x46494E49)
C_NHOSTS = 0x1100
LABELS = [0x1000, 0x1100, 0x1200, 0x1300, 0x1400, 0x1500, 0x1600, 0x2000, 0x2100, 0x2200,
          0x2300, 0x2400, 0x3000, 0x3100]


class Server:
    def __init__(self, n, env=None, args=()):
        e = dict(os.environ)
        e.setdefault("WANMPI_LOG_LEVEL", "2")
        e.update(env or {})
        self.p = subprocess.Popen([SERVER, "-server", str(n), *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=e, text=True)
        line = self.p.stdout.readline().strip()
        host, port = line.rsplit(":", 1)
        assert host.count(".") == 3, f"first line must be addr:port, got {line!r}"
        self.port = int(port)

    def wait(self, timeout=10):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise AssertionError("impi-server did not exit")
        return rc, self.p.stderr.read()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise AssertionError(f"connection closed after {len(b)} of {n} bytes")
        b += c
    return b


def hdr(cmd, ln):
    return struct.pack(">Ii", cmd, ln)


def join(port, rank, key=None):
    s = connect(port)
    mask = 0x2 if key is not None else 0x1
    s.sendall(hdr(AUTH, 4) + struct.pack(">I", mask))
    which, _ = struct.unpack(">ii", recv_exact(s, 8))
    if key is not None:
        assert which == 1, f"server chose method {which}, expected KEY"
        s.sendall(struct.pack(">Q", key))
    else:
        assert which == 0
    s.sendall(hdr(IMPI, 4) + struct.pack(">i", rank))
    return s


def expect_impi(s, n):
    assert recv_exact(s, 12) == hdr(IMPI, 4) + struct.pack(">i", n)


def coll(s, label, data):
    s.sendall(hdr(COLL, 4 + len(data)) + struct.pack(">I", label) + data)


def read_coll(s):
    cmd, ln = struct.unpack(">Ii", recv_exact(s, 8))
    assert cmd == COLL, hex(cmd)
    body = recv_exact(s, ln)
    label, mask = struct.unpack(">II", body[:8])
    return label, mask, body[8:]


def finish(socks):
    for s in socks:
        s.sendall(hdr(DONE, 0))
    for s in socks:
        assert recv_exact(s, 8) == hdr(DONE, 0)
    for s in socks:
        s.sendall(hdr(FINI, 0))


def case_happy():
    """Two clients, the byte example of IMPI.md §3.5, DONE, FINI, exit 0."""
    srv = Server(2)
    try:
        a, b = join(srv.port, 0), join(srv.port, 1)
        expect_impi(a, 2)
        expect_impi(b, 2)
        msg = hdr(COLL, 8) + struct.pack(">II", C_NHOSTS, 1)
        assert msg == bytes.fromhex("434F4C4C00000008" "00001100" "00000001")  # IMPI.md §3.5
        a.sendall(msg)
        b.sendall(msg)
        want = bytes.fromhex("434F4C4C00000010000011000000000300000001" "00000001")
        assert recv_exact(a, len(want)) == want
        assert recv_exact(b, len(want)) == want
        finish([a, b])
        rc, err = srv.wait()
        assert rc == 0, (rc, err)
    finally:
        srv.kill()


def case_done_early():
    """A client that sent DONE without a label still lets the others' label complete."""
    srv = Server(2)
    try:
        a, b = join(srv.port, 0), join(srv.port, 1)
        expect_impi(a, 2)
        expect_impi(b, 2)
        b.sendall(hdr(DONE, 0))
        coll(a, 0x1000, struct.pack(">II", 0, 0))
        label, mask, data = read_coll(a)
        assert (label, mask, data) == (0x1000, 1, struct.pack(">II", 0, 0))
        a.sendall(hdr(DONE, 0))
        assert recv_exact(a, 8) == hdr(DONE, 0)
        assert recv_exact(b, 8) == hdr(DONE, 0)
        a.sendall(hdr(FINI, 0))
        b.sendall(hdr(FINI, 0))
        assert srv.wait()[0] == 0
    finally:
        srv.kill()


def case_wrong_key():
    """A wrong key is rejected and logged; the server keeps serving the real clients."""
    srv = Server(2, env={"IMPI_AUTH_KEY": "12345"})
    try:
        bad = connect(srv.port)
        bad.sendall(hdr(AUTH, 4) + struct.pack(">I", 2))
        assert struct.unpack(">ii", recv_exact(bad, 8))[0] == 1
        bad.sendall(struct.pack(">Q", 999))
        bad.settimeout(5)
        assert bad.recv(1) == b"", "server must close a connection with a wrong key"
        nokey = connect(srv.port)
        nokey.sendall(hdr(AUTH, 4) + struct.pack(">I", 1))  # offers NONE only: refused
        nokey.settimeout(5)
        assert nokey.recv(8) == b""
        a, b = join(srv.port, 0, key=12345), join(srv.port, 1, key=12345)
        expect_impi(a, 2)
        expect_impi(b, 2)
        finish([a, b])
        rc, err = srv.wait()
        assert rc == 0, (rc, err)
        assert "wrong IMPI_AUTH_KEY" in err and "no common authentication method" in err, err
    finally:
        srv.kill()


def case_garbage_and_fuzz():
    """Garbage, truncated and mutated start-up streams are dropped; real clients still finish."""
    srv = Server(2)
    rnd = random.Random(6)
    # A start-up whose rank is out of range in all four bytes: no mutation of at most three bytes
    # can turn it into a real join (a joined client that vanishes would rightly end the job).
    good = hdr(AUTH, 4) + struct.pack(">I", 1) + hdr(IMPI, 4) + struct.pack(">I", 0x40404040)
    try:
        for i in range(300):
            s = connect(srv.port)
            kind = i % 4
            if kind == 0:
                data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 64)))
            elif kind == 1:
                data = good[: rnd.randrange(1, len(good))]  # truncated
            elif kind == 2:
                b = bytearray(good)
                for _ in range(rnd.randrange(1, 4)):
                    b[rnd.randrange(len(b))] = rnd.randrange(256)
                data = bytes(b)
            else:
                data = hdr(AUTH, 0x7FFFFFFF) + b"x" * 16  # oversized length
            try:
                s.sendall(data)
            except OSError:
                pass
            s.close()
        # The server is alive and serves a real job.
        a, b = join(srv.port, 0), join(srv.port, 1)
        expect_impi(a, 2)
        expect_impi(b, 2)
        finish([a, b])
        rc, err = srv.wait()
        assert rc == 0, (rc, err[-2000:])
    finally:
        srv.kill()


def case_slow_loris():
    """A connection that never completes AUTH is dropped after the join timeout."""
    srv = Server(1, env={"WANMPI_IMPI_JOIN_TIMEOUT": "1"})
    try:
        lazy = connect(srv.port)
        lazy.sendall(hdr(AUTH, 4)[:5])
        lazy.settimeout(5)
        t0 = time.time()
        assert lazy.recv(1) == b""
        assert time.time() - t0 < 4
        a = join(srv.port, 0)
        expect_impi(a, 1)
        finish([a])
        rc, err = srv.wait()
        assert rc == 0 and "did not complete AUTH" in err, (rc, err)
    finally:
        srv.kill()


def case_client_dies():
    """A client that disappears before FINI: the server names it, closes the others, exits 1."""
    srv = Server(2)
    try:
        a, b = join(srv.port, 0), join(srv.port, 1)
        expect_impi(a, 2)
        expect_impi(b, 2)
        b.close()
        a.settimeout(5)
        # The survivors get a LOST notice naming client 1 (wanmpi extension), then the close.
        got = b""
        while True:
            chunk = a.recv(4096)
            if not chunk:
                break
            got += chunk
        assert len(got) >= 12, "expected a LOST notice before the close, got %r" % got
        cmd, ln, lost = struct.unpack(">Iii", got[:12])
        assert cmd == 0x4C4F5354 and ln == len(got) - 8 and lost == 1, got
        assert b"client 1" in got[12:], got
        rc, err = srv.wait()
        assert rc != 0 and "client 1" in err and "before FINI" in err, (rc, err)
    finally:
        srv.kill()


def case_oversized_member():
    """A joined client sending an absurd length ends the job with a clear message."""
    srv = Server(1)
    try:
        a = join(srv.port, 0)
        expect_impi(a, 1)
        a.sendall(hdr(COLL, 0x7FFFFFF0))
        rc, err = srv.wait()
        assert rc != 0 and "invalid length" in err, (rc, err)
    finally:
        srv.kill()


def case_duplicate_rank():
    """A second client claiming a taken rank is dropped; the job goes on."""
    srv = Server(2)
    try:
        a = join(srv.port, 0)
        dup = join(srv.port, 0)
        dup.settimeout(5)
        assert dup.recv(1) == b""
        b = join(srv.port, 1)
        expect_impi(a, 2)
        expect_impi(b, 2)
        for lbl in LABELS:  # every label, LAM-style: block on each reply
            coll(a, lbl, b"A")
            coll(b, lbl, b"BB")
            for s in (a, b):
                label, mask, data = read_coll(s)
                assert (label, mask, data) == (lbl, 3, b"ABB")
        finish([a, b])
        rc, err = srv.wait()
        assert rc == 0 and "already taken" in err, (rc, err)
    finally:
        srv.kill()


def secret_file(text, mode=0o600):
    fd, path = tempfile.mkstemp(prefix="impi_secret.")
    os.write(fd, text.encode())
    os.close(fd)
    os.chmod(path, mode)
    return path


def mac(secret, label, *parts):
    return hmac.new(secret, label + b"".join(parts), hashlib.sha256).digest()


def hmac_join(port, rank, secret, replay=None):
    """wanmpi's AUTH method (wanlink/handshake.hpp). Returns (socket, verdict, nc, mac_c, ns)."""
    s = connect(port)
    s.sendall(hdr(AUTH, 4) + struct.pack(">I", 1 << 16))
    which, ln = struct.unpack(">ii", recv_exact(s, 8))
    assert (which, ln) == (16, 64), (which, ln)
    ch = recv_exact(s, 64)
    ns, sess = ch[:32], ch[32:]
    if replay:
        nc, mc = replay
    else:
        nc = os.urandom(32)
        mc = mac(secret, b"wanmpi-auth-client", ns, nc, sess)
    s.sendall(nc + mc)
    s.settimeout(5)
    v = s.recv(36)
    verdict = struct.unpack(">I", v[:4])[0] if len(v) >= 4 else None
    if verdict == 0:
        assert v[4:] == mac(secret, b"wanmpi-auth-server", ns, nc, sess), "server proof"
        s.sendall(hdr(IMPI, 4) + struct.pack(">i", rank))
    return s, verdict, nc, mc, sess


def case_hmac():
    """With a job secret: mutual challenge-response; a wrong secret and a replayed AUTH are
    refused and logged (the refused client is told so, not left guessing); NONE is refused
    unless allowed; the real clients go on; a world-readable secret file stops the server."""
    secret = b"correct horse battery staple!"
    path = secret_file(secret.decode())
    srv = Server(2, env={"WANMPI_JOB_SECRET_FILE": path})
    try:
        a, va, nc, mc, sess_a = hmac_join(srv.port, 0, secret)
        assert va == 0
        bad, vb, *_ = hmac_join(srv.port, 1, b"another secret, long enough")
        assert vb == 1, "a wrong secret gets verdict 1 before the close"
        rep, vr, *_ = hmac_join(srv.port, 1, secret, replay=(nc, mc))
        assert vr == 1, "a replayed response fails against a fresh challenge"
        none = connect(srv.port)
        none.sendall(hdr(AUTH, 4) + struct.pack(">I", 1))
        none.settimeout(5)
        assert none.recv(8) == b"", "NONE is refused when a secret is set"
        b, vb2, _, _, sess_b = hmac_join(srv.port, 1, secret)
        assert vb2 == 0 and sess_a == sess_b, "one session nonce per server run"
        expect_impi(a, 2)
        expect_impi(b, 2)
        finish([a, b])
        rc, err = srv.wait()
        assert rc == 0, (rc, err)
        assert err.count("failed authentication") == 2, err
        assert "no common authentication method" in err and "IMPI_AUTH_NONE" in err, err
        assert secret.decode() not in err, "the secret is never logged"
    finally:
        srv.kill()
    # NONE allowed explicitly beside the secret: a plain IMPI client gets in.
    srv = Server(1, env={"WANMPI_JOB_SECRET_FILE": path, "IMPI_AUTH_NONE": "1"})
    try:
        a = join(srv.port, 0)
        expect_impi(a, 1)
        finish([a])
        assert srv.wait()[0] == 0
    finally:
        srv.kill()
    loose = secret_file(secret.decode(), 0o644)
    r = subprocess.run([SERVER, "-server", "1"], capture_output=True, text=True,
                       env=dict(os.environ, WANMPI_JOB_SECRET_FILE=loose))
    assert r.returncode == 2 and "too open" in r.stderr, r.stderr
    os.unlink(loose)
    os.unlink(path)


KEEP, BACK, GONE, LOST = 0x4B454550, 0x4241434B, 0x474F4E45, 0x4C4F5354


def hmac_back(port, secret, client, fini=0, session=None):
    """A restarted impi-relay coming back (impi_resume.hpp): wanmpi's AUTH, then BACK.
    Returns (socket, BACK status or None if the server closed first)."""
    s = connect(port)
    s.sendall(hdr(AUTH, 4) + struct.pack(">I", 1 << 16))
    assert struct.unpack(">ii", recv_exact(s, 8)) == (16, 64)
    ch = recv_exact(s, 64)
    ns, sess = ch[:32], ch[32:]
    nc = os.urandom(32)
    s.sendall(nc + mac(secret, b"wanmpi-auth-client", ns, nc, sess))
    s.settimeout(5)
    v = recv_exact(s, 36)
    if struct.unpack(">I", v[:4])[0] != 0:
        return s, None
    s.sendall(hdr(BACK, 40) + struct.pack(">II", client, fini) + (session or sess))
    h = s.recv(12)
    if len(h) < 12:
        return s, None
    cmd, ln, st = struct.unpack(">IiI", h)
    assert cmd == BACK, hex(cmd)
    if ln > 4:
        recv_exact(s, ln - 4)
    return s, st


def after_done(port, secret):
    """Two clients through DONE; client 1 (the 'relay') says KEEP. Returns (a, b)."""
    a, va, *_ = hmac_join(port, 0, secret)
    b, vb, *_ = hmac_join(port, 1, secret)
    assert va == 0 and vb == 0
    expect_impi(a, 2)
    expect_impi(b, 2)
    for x in (a, b):
        x.sendall(hdr(DONE, 0))
    for x in (a, b):
        assert recv_exact(x, 8) == hdr(DONE, 0)
    b.sendall(hdr(KEEP, 0))
    return a, b


def case_relay_back():
    """impi-relay restarts, the server's side (docs/design/relay-restart.md): a client whose
    relay said KEEP and whose connection drops is waited for; BACK is refused without wanmpi's
    AUTH, for a client that never said KEEP and with another job's session nonce, and taken
    with the right ones (FINI carried in it); GONE ends the job at once and tells the others
    (LOST); a relay that does not come back within WANMPI_WAN_RECONNECT_S ends the job, naming
    it and the time waited."""
    secret = b"correct horse battery staple!"
    path = secret_file(secret.decode())
    env = {"WANMPI_JOB_SECRET_FILE": path, "WANMPI_WAN_RECONNECT_S": "2"}
    srv = Server(2, env=env)
    try:
        a, b = after_done(srv.port, secret)
        time.sleep(0.2)
        b.close()  # the relay dies: no GONE, no FINI
        time.sleep(0.3)
        assert srv.p.poll() is None, "the server waits for the relay"
        plain = connect(srv.port)  # BACK without AUTH: not even parsed as BACK
        plain.sendall(hdr(BACK, 40) + bytes(40))
        plain.settimeout(5)
        assert plain.recv(8) == b""
        _, st = hmac_back(srv.port, secret, 0)
        assert st == 1, "client 0 never said KEEP"
        _, st = hmac_back(srv.port, secret, 1, session=bytes(32))
        assert st == 1, "another job's session nonce"
        _, st = hmac_back(srv.port, b"another secret, long enough", 1)
        assert st is None, "another secret fails at AUTH"
        b2, st = hmac_back(srv.port, secret, 1, fini=1)
        assert st == 0, "the relay is taken back"
        a.sendall(hdr(FINI, 0))
        rc, err = srv.wait()
        assert rc == 0, (rc, err)
        assert "waiting up to 2 s for it to come back" in err, err
        assert "came back from" in err, err
        assert err.count("BACK refused") == 2, err
    finally:
        srv.kill()
    srv = Server(2, env=env)
    try:
        a, b = after_done(srv.port, secret)
        t0 = time.monotonic()
        why = b"the cluster's agent closed its connection before FINI"
        b.sendall(hdr(GONE, len(why)) + why)
        rc, err = srv.wait(5)
        assert rc != 0 and time.monotonic() - t0 < 2, (rc, err)
        h = recv_exact(a, 12)
        assert struct.unpack(">IiI", h)[0::2] == (LOST, 1), h.hex()
        assert "client 1" in err and why.decode() in err, err
    finally:
        srv.kill()
    srv = Server(2, env=env)
    try:
        a, b = after_done(srv.port, secret)
        time.sleep(0.2)
        t0 = time.monotonic()
        b.close()
        rc, err = srv.wait(6)
        took = time.monotonic() - t0
        assert rc != 0 and 1.5 < took < 4, (rc, took, err)
        assert "did not come back within 2 s (WANMPI_WAN_RECONNECT_S): impi-relay of client 1" in err, err
    finally:
        srv.kill()
    os.unlink(path)


def case_usage():
    r = subprocess.run([SERVER], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr
    r = subprocess.run([SERVER, "-server", "33"], capture_output=True, text=True)
    assert r.returncode == 2


if __name__ == "__main__":
    name = sys.argv[2]
    globals()["case_" + name]()
    print(f"impi-server {name}: passed")
