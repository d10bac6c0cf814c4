#!/usr/bin/env python3
"""The IMPI start-up end to end: impi-server, `mpirun -client ID ADDR:PORT` per cluster, and
impi_probe (a PMI program doing what MPI_Init does: host sockets, the agent, the job over the
KVS, the dance, a message over every host connection, FINI). Also a scripted raw-socket client
that offers only IMPI 0.0, a cluster that dies, and mpirun's -client option.

usage: impi_client_test.py CASE   (paths from the environment: MPIRUN, IMPI_SERVER, IMPI_PROBE,
PMI_CHECK, FAKE_AGENT). Every process a case starts is ended (by pid) whatever happens.
"""
import os
import re
import socket
import struct
import subprocess
import sys
import time

MPIRUN = os.environ["MPIRUN"]
SERVER = os.environ["IMPI_SERVER"]
PROBE = os.environ["IMPI_PROBE"]
PMI_CHECK = os.environ["PMI_CHECK"]
FAKE_AGENT = os.environ["FAKE_AGENT"]

AUTH, IMPI, COLL, DONE, FINI = (0x41555448, 0x494D5049, 0x434F4C4C, 0x444F4E45, 0x46494E49)
LABELS = [0x1000, 0x1100, 0x1200, 0x1300, 0x1400, 0x1500, 0x1600, 0x2000, 0x2100, 0x2200,
          0x2300, 0x2400, 0x3000, 0x3100]
PROCS = []


def start(argv, env=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.Popen(argv, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         **kw)
    PROCS.append(p)
    return p


def cleanup():
    for p in PROCS:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class Server:
    def __init__(self, n, env=None):
        self.p = start([SERVER, "-server", str(n)], env={"WANMPI_LOG_LEVEL": "2", **(env or {})})
        self.addr = self.p.stdout.readline().strip()
        assert re.match(r"^\d+\.\d+\.\d+\.\d+:\d+$", self.addr), self.addr
        self.port = int(self.addr.rsplit(":", 1)[1])

    def wait(self, timeout=30):
        rc = self.p.wait(timeout)
        return rc, self.p.stderr.read()


def finish(p, timeout=50):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"{p.args} did not finish:\n{out}\n{err}")
    return p.returncode, out, err


def mpirun(client, server, np, args=(), env=None, extra=()):
    # IMPI_TEST_NO_LINGER=1 makes the agents exit right after FINI (see impi_probe.cpp).
    if os.environ.get("IMPI_TEST_NO_LINGER"):
        args = (*args, "--no-linger")
    return start([MPIRUN, "--timeout", "50", "-client", str(client), server, *extra, "-n",
                  str(np), PROBE, *args], env=env)


RANK_RE = re.compile(r"^rank (\d+)/(\d+) client (\d+) host (\d+)/(\d+) maxlen (\d+) tag_ub (\d+) "
                     r"hiwater (\d+) ackmark (\d+) xsize (-?\d+) maxlinear (-?\d+) job (\w+)$",
                     re.M)


def case_three_clusters():
    """Three clusters of 1, 2 (one rank through wanmpi-proxy) and 3 ranks: identical jobs,
    global ranks client 0 first, negotiated minima, every host connection checked."""
    srv = Server(3)
    c0 = mpirun(0, srv.addr, 1)
    c1 = mpirun(1, srv.addr, 2, extra=("--host", "localhost:1,nodeA:1", "--launcher-exec",
                                       FAKE_AGENT))
    c2 = mpirun(2, srv.addr, 3, env={"IMPI_C_DATALEN": "65536", "IMPI_H_HIWATER": "32"})
    outs = []
    for i, c in enumerate((c0, c1, c2)):
        rc, out, err = finish(c)
        assert rc == 0, f"cluster {i}: rc {rc}\n{out}\n{err}"
        outs.append(out)
    rc, log = srv.wait()
    assert rc == 0, log
    lines = RANK_RE.findall("".join(outs))
    assert len(lines) == 6, outs
    by_rank = {int(m[0]): m for m in lines}
    assert sorted(by_rank) == list(range(6)), lines
    assert {m[11] for m in lines} == {lines[0][11]}, "every rank must see the same job"
    for r, client in [(0, 0), (1, 1), (2, 1), (3, 2), (4, 2), (5, 2)]:
        m = by_rank[r]
        assert (int(m[1]), int(m[2]), int(m[3]), int(m[4])) == (6, client, r, 6), m
        assert (m[5], m[6], m[7], m[8], m[9], m[10]) == ("65536", "2147483647", "32", "16",
                                                         "1024", "4"), m
    for c in range(3):
        assert f"client {c} versions: 0=wanmpi.2 1=wanmpi.2 2=wanmpi.2" in outs[c], outs[c]
    assert " No Errors" in outs[0]


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise AssertionError(f"connection closed after {len(b)} of {n} bytes")
        b += c
    return b


def case_plain_peer():
    """A scripted client offering only IMPI 0.0 (MetaMPICH-style ::ffff:a.b.c.d host ids, LAM's
    ackmark/hiwater) with a real 2-rank wanmpi cluster: that pair must speak plain 0.0; the dance
    and the negotiated minima include the scripted host."""
    srv = Server(2, env={"IMPI_AUTH_KEY": "987654321"})
    env = {"IMPI_AUTH_KEY": "987654321", "IMPI_NETWORK": "lo"}
    cl = mpirun(0, srv.addr, 2, env=env)
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen(4)
    hport = host.getsockname()[1]
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    try:
        s.sendall(struct.pack(">IiI", AUTH, 4, 0x2))
        which, _ = struct.unpack(">ii", recv_exact(s, 8))
        assert which == 1
        s.sendall(struct.pack(">Q", 987654321))
        s.sendall(struct.pack(">IiI", IMPI, 4, 1))
        assert struct.unpack(">Iii", recv_exact(s, 12)) == (IMPI, 4, 2)
        hid = b"\0" * 10 + b"\xff\xff" + socket.inet_aton("127.0.0.1")
        mine = {0x1000: struct.pack(">II", 0, 0), 0x1100: struct.pack(">I", 1),
                0x1200: struct.pack(">I", 1), 0x1300: struct.pack(">I", 32768),
                0x1400: struct.pack(">i", 32767), 0x1500: struct.pack(">i", -1),
                0x1600: struct.pack(">i", -1), 0x2000: hid, 0x2100: struct.pack(">I", hport),
                0x2200: struct.pack(">I", 1), 0x2300: struct.pack(">I", 10),
                0x2400: struct.pack(">I", 20), 0x3000: hid, 0x3100: struct.pack(">q", 4242)}
        replies = {}
        for label in LABELS:
            d = mine[label]
            s.sendall(struct.pack(">IiI", COLL, 4 + len(d), label) + d)
            while True:
                cmd, ln = struct.unpack(">Ii", recv_exact(s, 8))
                assert cmd == COLL, hex(cmd)
                body = recv_exact(s, ln)
                got, mask = struct.unpack(">II", body[:8])
                if got == label:
                    assert mask == 3
                    replies[label] = body[8:]
                    break
        s.sendall(struct.pack(">Ii", DONE, 0))
        assert recv_exact(s, 8) == struct.pack(">Ii", DONE, 0)
        # The wanmpi client listed 0.0 and its own pair; we listed 0.0 only.
        assert replies[0x1000] == struct.pack(">IIIII", 0, 0, 0x7761, 2, 0) + b"\0\0\0\0", \
            replies[0x1000].hex()
        # The dance: client 0 has hosts 0 and 1 (one per rank); we are host 2 and connect.
        peers = []
        for h in range(2):
            ip = socket.inet_ntoa(replies[0x2000][16 * h + 12:16 * h + 16])
            port = struct.unpack(">I", replies[0x2100][4 * h:4 * h + 4])[0]
            c = socket.create_connection((ip, port), timeout=30)
            c.sendall(struct.pack(">I", 2))
            peers.append(c)
        for h, c in enumerate(peers):
            assert struct.unpack(">I", recv_exact(c, 4))[0] == h  # their world rank
            c.sendall(struct.pack(">I", 2))                       # ours
        s.sendall(struct.pack(">Ii", FINI, 0))  # our only proc is done
        rc, out, err = finish(cl)
        assert rc == 0, f"rc {rc}\n{out}\n{err}"
        assert "client 0 versions: 0=wanmpi.2 1=0.0" in out, out
        lines = RANK_RE.findall(out)
        assert len(lines) == 2, out
        for m in lines:
            assert (m[1], m[4], m[5], m[6], m[7], m[8]) == ("3", "3", "32768", "32767", "20",
                                                            "10"), m
        rc, log = srv.wait()
        assert rc == 0, log
        for c in peers:
            c.close()
    finally:
        s.close()
        host.close()


def case_cluster_dies():
    """Cluster 1's only rank dies after the start-up: its agent's connection closes, the server
    ends the job, and cluster 0's agent reports the loss naming the server; nothing hangs."""
    srv = Server(2)
    t0 = time.monotonic()
    env = {"IMPI_NETWORK": "lo"}
    c0 = mpirun(0, srv.addr, 2, args=("--watch",), env=env)
    c1 = mpirun(1, srv.addr, 1, args=("--die-rank", "2"), env=env)
    rc1, out1, err1 = finish(c1)
    assert rc1 == 3, f"rc {rc1}\n{out1}\n{err1}"
    rc0, out0, err0 = finish(c0)
    assert rc0 == 4, f"rc {rc0}\n{out0}\n{err0}"
    assert (f"agent of client 0: IMPI server {srv.addr} closed the connection before our FINI"
            in err0), err0
    rc, log = srv.wait()
    assert rc == 1 and "client 1" in log, log
    assert time.monotonic() - t0 < 20


def run_pmi_check_env(args, env=None):
    p = start([MPIRUN, "--timeout", "30", *args, PMI_CHECK, "env", "WANMPI_IMPI_CLIENT",
               "WANMPI_IMPI_SERVER"], env=env)
    return finish(p)


def case_mpirun_client_env():
    """-client passes WANMPI_IMPI_CLIENT / WANMPI_IMPI_SERVER to local and remote ranks."""
    rc, out, err = run_pmi_check_env(["-client", "7", "10.1.2.3:4567", "-n", "1"])
    assert rc == 0, err
    assert "rank 0: WANMPI_IMPI_CLIENT=7" in out and \
        "rank 0: WANMPI_IMPI_SERVER=10.1.2.3:4567" in out, out
    rc, out, err = run_pmi_check_env(["-client", "31", "server.example:9", "--host", "nodeA:2",
                                      "--launcher-exec", FAKE_AGENT, "-n", "2"])
    assert rc == 0, err
    for r in (0, 1):
        assert f"rank {r}: WANMPI_IMPI_CLIENT=31" in out, out
        assert f"rank {r}: WANMPI_IMPI_SERVER=server.example:9" in out, out


def case_mpirun_client_usage():
    """Bad -client arguments: exit 2 with a message saying what is wrong."""
    for args, want in [(["-client"], "needs two arguments"),
                       (["-client", "32", "1.2.3.4:5"], "IMPI client id must be 0..31"),
                       (["-client", "a", "1.2.3.4:5"], "IMPI client id must be 0..31"),
                       (["-client", "1", "1.2.3.4"], "ADDR:PORT"),
                       (["-client", "1", "1.2.3.4:99999"], "ADDR:PORT"),
                       (["-client", "1", "h:1", "-client", "2", "h:1"], "given twice")]:
        p = start([MPIRUN, *args, "-n", "1", PMI_CHECK])
        rc, out, err = finish(p)
        assert rc == 2 and want in err, (args, rc, err)
    # Not an IMPI job without -client: the probe says so.
    p = start([MPIRUN, "-n", "1", PROBE], env={"WANMPI_IMPI_SERVER": ""})
    rc, out, err = finish(p)
    assert rc != 0 and "not an IMPI job" in err, err


if __name__ == "__main__":
    try:
        globals()["case_" + sys.argv[1]]()
    finally:
        cleanup()
    print("ok")
