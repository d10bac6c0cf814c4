#!/usr/bin/env python3
"""Hostile raw-socket peers against a real multi-cluster start-up (mpirun -client + impi_probe,
which runs exactly what MPI_Init runs: host sockets, the agent, the job over PMI, the dance).

usage: impi_hostile_test.py CASE    (paths from the environment: MPIRUN, IMPI_SERVER, IMPI_PROBE)

  host_port          while cluster 0 waits for cluster 1, every rank's IMPI host port gets
                     garbage, a truncated rank, an oversized rank (0xFFFFFFFF), a rank that is
                     not higher than its own, a slow-loris (1 byte, then silence) and a flood of
                     silent connections (more than the dance keeps pending); then cluster 1
                     joins: the job must complete, each intruder be logged, none be taken for a
                     host.
  server_port_live   impi-server with a real cluster joined and waiting: garbage, truncated AUTH,
                     an oversized length, a duplicate and an out-of-range client rank, a
                     slow-loris and a flood of silent connections; then the second cluster joins
                     and the job must complete with exit 0 everywhere, the intruders logged.
  packets_ok         after the dance, a scripted plain IMPI 0.0 peer (rank 1) sends rank 0 a good
                     DATA packet and does the FINI handshake: the job completes (the control).
  packets_bad        the peer sends a malformed packet instead (garbage type, pk_len > maxlen,
                     pk_len > pk_msglen, a truncated header, a stray fragment): the rank fails
                     with a message, never by a signal, never by the timeout.
  packets_bogus      well-framed packets with an unknown context id, an out-of-range source rank,
                     a SYNCACK for nothing, then the good message: no crash, no hang.

Nothing here waits a fixed time for a result: every wait is for an event with a deadline.
Every process a case starts is ended (by pid) whatever happens; every socket is closed.
"""
import os
import random
import re
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testproc import PROCS, SOCKS, Proc, cleanup  # noqa: E402

MPIRUN = os.environ["MPIRUN"]
SERVER = os.environ["IMPI_SERVER"]
PROBE = os.environ["IMPI_PROBE"]
AUTH, IMPI, COLL, DONE, FINI = (0x41555448, 0x494D5049, 0x434F4C4C, 0x444F4E45, 0x46494E49)


def sock(port, timeout=5):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    SOCKS.append(s)
    return s


def send_close(port, data):
    try:
        s = sock(port)
        if data:
            s.sendall(data)
        s.close()
    except OSError:
        pass  # refused or reset: the peer defends itself, which is fine


def start_server(n, env=None):
    srv = Proc([SERVER, "-server", str(n)], env={"WANMPI_LOG_LEVEL": "2", **(env or {})})
    m = srv.wait_for("out", r"^(\d+\.\d+\.\d+\.\d+):(\d+)$", 10)
    return srv, f"{m.group(1)}:{m.group(2)}", int(m.group(2))


def mpirun(client, addr, np, env=None):
    e = {"IMPI_NETWORK": "lo", **(env or {})}
    return Proc([MPIRUN, "--timeout", "60", "-client", str(client), addr, "-n", str(np), PROBE],
                env=e, log_level=1)


def free_port_range(n):
    """A range of n consecutive free loopback ports (checked by binding each)."""
    rnd = random.Random(os.getpid())
    for _ in range(200):
        lo = rnd.randrange(20000, 60000 - n)
        ok = True
        held = []
        for p in range(lo, lo + n):
            s = socket.socket()
            try:
                s.bind(("0.0.0.0", p))
                held.append(s)
            except OSError:
                ok = False
                break
        for s in held:
            s.close()
        if ok:
            return lo
    raise AssertionError("no free port range")


def listening_ports(ports, want, timeout=30):
    """Waits until `want` of `ports` accept a connection; returns them. (Each successful probe
    is itself an intruder that closes without a word.)"""
    end = time.monotonic() + timeout
    found = set()
    while time.monotonic() < end:
        for p in ports:
            if p in found:
                continue
            try:
                s = socket.create_connection(("127.0.0.1", p), timeout=1)
                s.close()
                found.add(p)
            except OSError:
                pass
        if len(found) >= want:
            return sorted(found)
        time.sleep(0.05)  # polling interval while the ranks start, not a pass/fail wait
    raise AssertionError(f"only {sorted(found)} of ports {ports} listen")


def case_host_port():
    srv, addr, _ = start_server(2)
    lo = free_port_range(4)
    env0 = {"IMPI_PORT_RANGE": f"{lo}:{lo + 3}", "WANMPI_IMPI_JOIN_TIMEOUT": "2"}
    c0 = mpirun(0, addr, 2, env=env0)
    # Cluster 0's ranks are hosts 0 and 1; they listen before they talk to the server.
    ports = listening_ports(list(range(lo, lo + 4)), 2)
    srv.wait_for("err", r"client 0 joined")
    rnd = random.Random(6)
    held = []
    for p in ports:
        send_close(p, bytes([0xEE]) + bytes(rnd.randrange(256) for _ in range(63)))  # garbage
        send_close(p, b"\x00\x00")                     # truncated rank
        send_close(p, b"\xff\xff\xff\xff")             # oversized rank
        send_close(p, struct.pack(">I", 0))            # not higher than the acceptor
        s = sock(p)
        s.sendall(b"\x00")                             # slow-loris: 1 byte, then silence
        held.append(s)
        for _ in range(70):                            # more than the 64 kept pending
            try:
                held.append(sock(p, timeout=0.5))
            except OSError:
                pass  # the backlog is full: the kernel refuses, as it should
    c1 = mpirun(1, addr, 2)
    rcs = [c0.finish(), c1.finish()]
    assert rcs == [0, 0], f"clusters exited {rcs}:\n--- c0\n{c0.text()}\n--- c1\n{c1.text()}"
    assert srv.finish(30) == 0, srv.text()
    log = c0.text()
    for want in ("claims host rank 4294967295", "claims host rank 0",
                 "closed before sending its host rank", "was evicted"):
        assert want in log, f"cluster 0 did not log {want!r}:\n{log}"
    assert " No Errors" in c0.text(), c0.text()
    lines = re.findall(r"^rank (\d+)/4 ", c0.text() + c1.text(), re.M)
    assert sorted(lines) == ["0", "1", "2", "3"], lines
    for s in held:
        s.close()


def case_server_port_live():
    srv, addr, port = start_server(2, env={"WANMPI_IMPI_JOIN_TIMEOUT": "1"})
    c0 = mpirun(0, addr, 1)
    srv.wait_for("err", r"client 0 joined")
    rnd = random.Random(7)
    send_close(port, bytes(rnd.randrange(256) for _ in range(100)))               # garbage
    send_close(port, struct.pack(">Ii", AUTH, 4)[:6])                             # truncated
    send_close(port, struct.pack(">Ii", AUTH, 0x7FFFFFFF) + b"y" * 32)            # oversized
    send_close(port, struct.pack(">IiI", AUTH, 4, 1) + struct.pack(">Ii", IMPI, 4)
               + struct.pack(">i", 0))                                            # rank taken
    send_close(port, struct.pack(">IiI", AUTH, 4, 1) + struct.pack(">Ii", IMPI, 4)
               + struct.pack(">i", 17))                                           # rank > N
    lazy = sock(port)
    lazy.sendall(struct.pack(">Ii", AUTH, 4)[:5])                                 # slow-loris
    silent = []
    for _ in range(100):
        try:
            silent.append(sock(port, timeout=0.5))
        except OSError:
            pass
    # The slow-loris is dropped after the join timeout, while the job is still waiting.
    srv.wait_for("err", r"did not complete AUTH", 20)
    c1 = mpirun(1, addr, 1)
    rcs = [c0.finish(), c1.finish()]
    assert rcs == [0, 0], f"clusters exited {rcs}:\n{c0.text()}\n{c1.text()}"
    assert srv.finish(30) == 0, srv.text()
    log = srv.text()
    for want in ("expected AUTH with a 4-byte mask", "already taken", "out of range",
                 "did not complete AUTH"):
        assert want in log, f"impi-server did not log {want!r}:\n{log}"
    assert " No Errors" in c0.text(), c0.text()
    for s in silent:
        s.close()
    lazy.close()


# ---- after the dance: packets from a scripted plain-IMPI peer ----------------------------------

PK_DATA, PK_DATASYNC, PK_PROTOACK, PK_SYNCACK, PK_FINI = 0, 1, 2, 3, 7
PK_FMT = ">II16sq16sqQQQiiQQqQQ"  # IMPI.md 5.2: 128 bytes, big-endian
assert struct.calcsize(PK_FMT) == 128


def packet(typ, ln, src, dst, msglen=None, lsrank=1, tag=5, cid=0, srqid=0, drqid=0):
    return struct.pack(PK_FMT, typ, ln, src[0], src[1], dst[0], dst[1], srqid, drqid,
                       ln if msglen is None else msglen, lsrank, tag, cid, 0, 0, 0, 0)


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise ConnectionError(f"closed after {len(b)} of {n} bytes")
        b += c
    return b


class PlainPeer:
    """Client 1 of a 2-client job: one host, one proc (world rank 1), IMPI 0.0 only, LAM-style
    ackmark/hiwater. Joins, dances with the real cluster's only host, then is driven by a case."""

    def __init__(self, srv_port):
        self.lst = socket.socket()
        self.lst.bind(("127.0.0.1", 0))
        self.lst.listen(4)
        SOCKS.append(self.lst)
        self.s = sock(srv_port, timeout=30)
        s = self.s
        s.sendall(struct.pack(">IiI", AUTH, 4, 1))
        assert struct.unpack(">ii", recv_exact(s, 8))[0] == 0
        s.sendall(struct.pack(">IiI", IMPI, 4, 1))
        assert struct.unpack(">Iii", recv_exact(s, 12)) == (IMPI, 4, 2)
        hid = b"\0" * 12 + socket.inet_aton("127.0.0.1")
        self.me = (hid, 4242)
        mine = {0x1000: struct.pack(">II", 0, 0), 0x1100: struct.pack(">I", 1),
                0x1200: struct.pack(">I", 1), 0x1300: struct.pack(">I", 65536),
                0x1400: struct.pack(">i", 32767), 0x1500: struct.pack(">i", -1),
                0x1600: struct.pack(">i", -1), 0x2000: hid,
                0x2100: struct.pack(">I", self.lst.getsockname()[1]),
                0x2200: struct.pack(">I", 1), 0x2300: struct.pack(">I", 10),
                0x2400: struct.pack(">I", 20), 0x3000: hid, 0x3100: struct.pack(">q", 4242)}
        rep = {}
        for label in (0x1000, 0x1100, 0x1200, 0x1300, 0x1400, 0x1500, 0x1600, 0x2000, 0x2100,
                      0x2200, 0x2300, 0x2400, 0x3000, 0x3100):
            d = mine[label]
            s.sendall(struct.pack(">IiI", COLL, 4 + len(d), label) + d)
            while True:
                cmd, ln = struct.unpack(">Ii", recv_exact(s, 8))
                body = recv_exact(s, ln)
                if struct.unpack(">I", body[:4])[0] == label:
                    rep[label] = body[8:]
                    break
        s.sendall(struct.pack(">Ii", DONE, 0))
        assert recv_exact(s, 8) == struct.pack(">Ii", DONE, 0)
        self.rank0 = (rep[0x3000][:16], struct.unpack(">q", rep[0x3100][:8])[0])
        ip = socket.inet_ntoa(rep[0x2000][12:16])
        port = struct.unpack(">I", rep[0x2100][:4])[0]
        # We are host 1: we connect to host 0 and send our host rank.
        self.c = socket.create_connection((ip, port), timeout=30)
        SOCKS.append(self.c)
        self.c.sendall(struct.pack(">I", 1))

    def send(self, b):
        try:
            self.c.sendall(b)
        except OSError:
            pass  # the rank already dropped us: that is its right

    def good_message(self, tag=5):
        self.send(packet(PK_DATA, 4, self.me, self.rank0, tag=tag) + b"WXYZ")

    def finish(self):
        """Answers the rank's packets until its FINI, then FINI back, then FINI to the server."""
        self.c.settimeout(30)
        while True:
            h = recv_exact(self.c, 128)
            f = struct.unpack(PK_FMT, h)
            typ, ln = f[0], f[1]
            if typ in (PK_DATA, PK_DATASYNC):
                recv_exact(self.c, ln)
            if typ == PK_FINI:
                break
        self.c.sendall(struct.pack(PK_FMT, PK_FINI, 0, b"\0" * 16, -1, b"\0" * 16, -1,
                                   0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        self.s.sendall(struct.pack(">Ii", FINI, 0))


def hostile_rank():
    r = os.environ.get("HOSTILE_RANK", "")
    assert r, "HOSTILE_RANK (the impi_hostile_rank program) is not set"
    return r


def packet_job(hostile):
    """Runs one job (cluster 0 = impi_hostile_rank, cluster 1 = the scripted peer, which sends
    `hostile(peer)` after the dance); returns (mpirun rc, its output, impi-server)."""
    srv, addr, port = start_server(2)
    c0 = Proc([MPIRUN, "--timeout", "60", "-client", "0", addr, "-n", "1", hostile_rank()],
              env={"IMPI_NETWORK": "lo"}, log_level=1)
    peer = PlainPeer(port)
    hostile(peer)
    rc = c0.finish(90)
    return rc, c0.text(), srv, peer


def case_packets_ok():
    """The control: a well-formed DATA packet from the plain peer; the job completes."""
    def good(peer):
        peer.good_message()
        peer.finish()
    rc, out, srv, peer = packet_job(good)
    assert rc == 0 and " No Errors" in out, f"rc {rc}:\n{out}"
    assert "got 'WXYZ' (4 bytes, tag 5)" in out, out


def case_packets_bad():
    """Malformed packets: the rank must fail with a clear message, not crash or hang."""
    rnd = random.Random(11)
    cases = {
        "garbage type": lambda p: p.send(struct.pack(">I", 0xDEAD) + bytes(
            rnd.randrange(256) for _ in range(124))),
        "pk_len above maxlen": lambda p: p.send(packet(PK_DATA, 0x7FFFFFF0, p.me, p.rank0)),
        "pk_len above pk_msglen": lambda p: p.send(packet(PK_DATA, 100, p.me, p.rank0, msglen=4)
                                                   + b"x" * 100),
        "truncated header": lambda p: (p.send(packet(PK_DATA, 4, p.me, p.rank0)[:60]),
                                       p.c.close()),
        "DATA fragment without a long message": lambda p: (p.send(
            packet(PK_DATA, 4, p.me, p.rank0, msglen=100, drqid=0) + b"abcd")),
    }
    for name, hostile in cases.items():
        t0 = time.monotonic()
        rc, out, srv, peer = packet_job(hostile)
        took = time.monotonic() - t0
        assert rc not in (0, 124), f"{name}: the rank must fail, got rc {rc}:\n{out}"
        assert "signal" not in out, f"{name}: the rank crashed:\n{out}"
        assert re.search(r"IMPI|packet|without IMPI FINI", out), f"{name}: no clear message:\n{out}"
        print(f"{name}: rc {rc} after {took:.1f} s: " +
              " | ".join(l for l in out.splitlines() if "IMPI" in l or "packet" in l)[:300])
        srv.finish(30)
        for s in (peer.c, peer.s, peer.lst):
            s.close()


def case_packets_bogus():
    """Well-framed packets with fields the rank must not trust (a context id it does not know,
    a source rank and a tag out of range, a control packet for nothing), then the good message:
    the rank must not crash; it drops them (the job completes) or fails with a message."""
    def bogus(peer):
        peer.send(packet(PK_DATA, 4, peer.me, peer.rank0, cid=123456789) + b"AAAA")
        peer.send(packet(PK_DATA, 4, peer.me, peer.rank0, cid=1 << 40) + b"BBBB")
        peer.send(packet(PK_DATA, 4, peer.me, peer.rank0, lsrank=0x7FFFFFFF, cid=7) + b"CCCC")
        peer.send(packet(PK_SYNCACK, 0, peer.me, peer.rank0, srqid=0xDEADBEEF, drqid=1))
        peer.send(packet(PK_PROTOACK, 0, peer.me, peer.rank0))
        peer.good_message(tag=6)
        try:
            peer.finish()
        except (OSError, ConnectionError):
            pass  # the rank refused the bogus packets and failed: judged below
    rc, out, srv, peer = packet_job(bogus)
    assert "signal" not in out, f"the rank crashed:\n{out}"
    assert rc != 124, f"the rank hung:\n{out}"
    if rc == 0:
        assert "got 'WXYZ' (4 bytes, tag 6)" in out, out
    else:
        assert re.search(r"IMPI|packet", out), f"no clear message:\n{out}"
    print(f"rc {rc}:\n{out}")


if __name__ == "__main__":
    name = sys.argv[1]
    try:
        globals()["case_" + name]()
    finally:
        cleanup()
    print(f"impi hostile {name}: passed")
