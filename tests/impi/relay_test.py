#!/usr/bin/env python3
"""impi-relay end to end: a real impi-server on 127.0.0.1, a real impi-relay (-public 127.0.0.1
-private 127.0.0.2) and two FAKE plain IMPI 0.0 clients written here (AUTH NONE, IMPI, the 14
COLL labels, DONE, hosts that listen and dance, 128-byte packet headers; no wanmpi extension).
The private client's hosts listen on 127.0.0.3, the public client's on 127.0.0.1; the private
client's agent talks to the relay's printed address. Two hosts per client.

usage: relay_test.py CASE    (paths from the environment: IMPI_SERVER, IMPI_RELAY)

  startup_and_data  client 1 private. Both views are exactly what the relay promises (IMPI.md
                    §3, impi_relay.hpp): the private client's hosts and procs outside on the
                    relay's public address, the outside hosts and procs inside on its private
                    address, everything else byte for byte the same; the dance through the relay
                    (the private hosts connect out); DATA (small, and 1 MB to take the splice
                    path), DATASYNC, PROTOACK, SYNCACK both ways with the proc ids translated
                    exactly and payloads identical; FINI everywhere: server and relay exit 0.
  private_first     the same with the private client as client 0 (the public hosts connect in),
                    AUTH KEY through the relay; in both, the private agent sends its whole
                    start-up at once (the relay holds its host and proc labels until its ports
                    are allocated).
  slow_receiver     a host reads 8 MB of 1 MB packets slowly (1 MB, a pause, ...): the relay waits
                    without spinning (CPU use), the other direction flows, everything arrives
                    intact.
  hostile           the relay's control port gets garbage, a second AUTH, malformed TRNKs, huge
                    lengths and a silent connection during the start-up; its data ports get
                    wrong, out-of-range, same-side, not-higher and already-used dance ranks and a
                    silent connection after the dance: each is closed and logged, the job goes
                    on (every pair still carries packets) and ends with exit 0 everywhere.
  forbidden_proc    a packet naming a proc the pair's hosts do not carry (as source, and as
                    destination) is never forwarded: that pair's connections are closed, the
                    relay logs it, the other pairs keep working.
  relay_dies        the relay is killed after the dance: impi-server exits non-zero within 5 s,
                    naming client 1, and tells client 0 (LOST); the hosts see their relay
                    connections close.
  cut_header        the forwarding state machine, fuzz-style with a fixed seed: rounds of many
                    small DATA packets (random payloads of 0..300 bytes, so headers are most of
                    the stream) towards a host that reads nothing for 0.3 s, then everything.
                    Each pause fills the relay's buffer to its last byte, which then ends inside
                    a header more often than not: the state that stalled a pair before commit
                    6dacf8b (all before the cut header written, the buffer full, no read asked
                    for). Every byte must arrive, translated, within the socket deadline.
  state_refused     impi-relay -state FILE (docs/design/relay-restart.md) refuses, at once and
                    with a message saying why, a state file that others may read, one that is
                    not a state file, one whose MAC does not verify with the job secret (edited,
                    or another job's), -state without a job secret, and -state with trunks.

Every wait has a deadline; every process started here is ended by its pid; sockets are closed.
"""
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testproc import PROCS, SOCKS, Proc, cleanup  # noqa: E402

SERVER = os.environ["IMPI_SERVER"]
RELAY = os.environ["IMPI_RELAY"]
AUTH, IMPI, COLL, DONE, FINI, LOST = (0x41555448, 0x494D5049, 0x434F4C4C, 0x444F4E45,
                                      0x46494E49, 0x4C4F5354)
TRNK = 0x54524E4B
C_VERSION, C_NHOSTS, C_NPROCS, C_DATALEN, C_TAGUB, C_XSIZE, C_MAXLINEAR = (
    0x1000, 0x1100, 0x1200, 0x1300, 0x1400, 0x1500, 0x1600)
H_IPV6, H_PORT, H_NPROCS, H_ACKMARK, H_HIWATER, P_IPV6, P_PID = (
    0x2000, 0x2100, 0x2200, 0x2300, 0x2400, 0x3000, 0x3100)
LABELS = [C_VERSION, C_NHOSTS, C_NPROCS, C_DATALEN, C_TAGUB, C_XSIZE, C_MAXLINEAR, H_IPV6,
          H_PORT, H_NPROCS, H_ACKMARK, H_HIWATER, P_IPV6, P_PID]
REWRITTEN = {H_IPV6, H_PORT, P_IPV6, P_PID}
PK_DATA, PK_DATASYNC, PK_PROTOACK, PK_SYNCACK, PK_FINI = 0, 1, 2, 3, 7
PUB, PRIV, PRIV_HOSTS, PUB_HOSTS = "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.1"
DATALEN = 1 << 20
T = 5  # seconds: every socket operation's deadline


def relay_pid(i):
    return (0x524C59 << 40) | i


def hid(ip):
    return bytes(12) + socket.inet_aton(ip)


def ip_of(h):
    assert h[:12] == bytes(12), h.hex()
    return socket.inet_ntoa(h[12:])


def track(s):
    SOCKS.append(s)
    s.settimeout(T)
    return s


def connect(ip, port):
    return track(socket.create_connection((ip, port), timeout=T))


def recv_exact(s, n):
    b = bytearray()
    while len(b) < n:
        c = s.recv(min(n - len(b), 1 << 20))
        if not c:
            raise AssertionError(f"connection closed after {len(b)} of {n} bytes")
        b += c
    return bytes(b)


def closed(s, timeout=T):
    """True once the peer has closed s (EOF or reset); False if bytes arrive instead."""
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def send_cmd(s, cmd, payload=b""):
    s.sendall(struct.pack(">Ii", cmd, len(payload)) + payload)


def recv_cmd(s):
    cmd, n = struct.unpack(">Ii", recv_exact(s, 8))
    return cmd, recv_exact(s, n)


# ---- the fake IMPI 0.0 client ------------------------------------------------------------------

class Client:
    """One plain IMPI client: hosts that listen on `ip` (procs per host given), its procs' ids
    (the host's address, pid 1000*rank + 10*host + i) and its 14 label contributions."""

    def __init__(self, rank, ip, procs_per_host):
        self.rank, self.ip = rank, ip
        self.listeners = []
        for _ in procs_per_host:
            s = track(socket.socket())
            s.bind((ip, 0))
            s.listen(16)
            self.listeners.append(s)
        self.ports = [s.getsockname()[1] for s in self.listeners]
        self.hnprocs = list(procs_per_host)
        self.procs = [(hid(ip), 1000 * rank + 10 * h + i)
                      for h, n in enumerate(procs_per_host) for i in range(n)]

    def contribution(self, label):
        u = lambda v: struct.pack(">I", v)
        return {
            C_VERSION: struct.pack(">II", 0, 0),
            C_NHOSTS: u(len(self.ports)),
            C_NPROCS: u(len(self.procs)),
            C_DATALEN: u(DATALEN),
            C_TAGUB: struct.pack(">i", 2147483647),
            C_XSIZE: struct.pack(">i", -1),
            C_MAXLINEAR: struct.pack(">i", -1),
            H_IPV6: b"".join(hid(self.ip) for _ in self.ports),
            H_PORT: b"".join(u(p) for p in self.ports),
            H_NPROCS: b"".join(u(n) for n in self.hnprocs),
            H_ACKMARK: b"".join(u(10) for _ in self.ports),
            H_HIWATER: b"".join(u(20) for _ in self.ports),
            P_IPV6: b"".join(h for h, _ in self.procs),
            P_PID: b"".join(struct.pack(">q", p) for _, p in self.procs),
        }[label]


def startup(clients, addrs, after_auth=None, key=None, pipelined=()):
    """The agents in lockstep (the server answers a label once every client sent it), except
    the clients in `pipelined`, which send IMPI, every label and DONE at once. With `key`, AUTH
    offers only KEY (IMPI.md §3.4). Returns the agent sockets and every client's replies."""
    agents = [connect(*a) for a in addrs]
    for s in agents:
        send_cmd(s, AUTH, struct.pack(">I", 1 if key is None else 2))
    for s in agents:
        which, n = struct.unpack(">ii", recv_exact(s, 8))
        assert which == (0 if key is None else 1) and 0 <= n <= 64, (which, n)
        recv_exact(s, n)
        if key is not None:
            s.sendall(struct.pack(">Q", key))
    if after_auth:
        after_auth()
    for i in pipelined:
        c = clients[i]
        agents[i].sendall(
            struct.pack(">Ii", IMPI, 4) + struct.pack(">i", c.rank) +
            b"".join(struct.pack(">IiI", COLL, 4 + len(c.contribution(l)), l) + c.contribution(l)
                     for l in LABELS) + struct.pack(">Ii", DONE, 0))
    for i, (c, s) in enumerate(zip(clients, agents)):
        if i not in pipelined:
            send_cmd(s, IMPI, struct.pack(">i", c.rank))
    for s in agents:
        assert recv_cmd(s) == (IMPI, struct.pack(">i", len(clients)))
    replies = [{} for _ in clients]
    for label in LABELS:
        for i, (c, s) in enumerate(zip(clients, agents)):
            if i in pipelined:
                continue
            send_cmd(s, COLL, struct.pack(">I", label) + c.contribution(label))
        for i, s in enumerate(agents):
            cmd, p = recv_cmd(s)
            assert cmd == COLL, hex(cmd)
            lab, mask = struct.unpack(">II", p[:8])
            assert (lab, mask) == (label, (1 << len(clients)) - 1), (hex(lab), mask)
            replies[i][label] = p[8:]
    for i, s in enumerate(agents):
        if i not in pipelined:
            send_cmd(s, DONE)
    for s in agents:
        assert recv_cmd(s) == (DONE, b"")
    return agents, replies


def view(rep):
    """The job as one client sees it: hosts [(ip, port, nprocs, client)], procs [(id, host)]."""
    nh = struct.unpack(f">{len(rep[C_NHOSTS]) // 4}I", rep[C_NHOSTS])
    H = sum(nh)
    ids = [rep[H_IPV6][16 * i:16 * i + 16] for i in range(H)]
    ports = struct.unpack(f">{H}I", rep[H_PORT])
    hn = struct.unpack(f">{H}I", rep[H_NPROCS])
    owner = [c for c, n in enumerate(nh) for _ in range(n)]
    hosts = [(ip_of(ids[h]), ports[h], hn[h], owner[h]) for h in range(H)]
    P = sum(hn)
    pids = struct.unpack(f">{P}q", rep[P_PID])
    procs = [((rep[P_IPV6][16 * r:16 * r + 16], pids[r]), h)
             for r, h in enumerate(h for h in range(H) for _ in range(hn[h]))]
    return {"hosts": hosts, "procs": procs}


def check_views(clients, replies, priv):
    """(a): the two views differ exactly where the relay rewrites, and agree on the job."""
    pub = 1 - priv
    for label in LABELS:
        if label not in REWRITTEN:
            assert replies[0][label] == replies[1][label], hex(label)
    vpub, vpriv = view(replies[pub]), view(replies[priv])
    assert [(n, c) for _, _, n, c in vpub["hosts"]] == [(n, c) for _, _, n, c in vpriv["hosts"]]
    assert [h for _, h in vpub["procs"]] == [h for _, h in vpriv["procs"]]
    assert len(vpub["hosts"]) == 4 and len(vpub["procs"]) == sum(len(c.procs) for c in clients)
    k_out = 0
    faces_pub, faces_priv = set(), set()
    for g, (hp, hq) in enumerate(zip(vpub["hosts"], vpriv["hosts"])):
        c = hp[3]
        real = (clients[c].ip, clients[c].ports[g - 2 * c])
        if c == priv:
            assert (hp[0], hp[1]) != real and hp[0] == PUB, (g, hp)  # a relay public port
            assert (hq[0], hq[1]) == real, (g, hq)                    # its own, unchanged
            faces_pub.add(hp[1])
        else:
            assert (hp[0], hp[1]) == real, (g, hp)
            assert hq[0] == PRIV and hq[1] != real[1], (g, hq)       # a relay private port
            faces_priv.add(hq[1])
    assert len(faces_pub) == 2 and len(faces_priv) == 2
    i_own = 0
    for r, ((idp, hp), (idq, hq)) in enumerate(zip(vpub["procs"], vpriv["procs"])):
        c = vpub["hosts"][hp][3]
        if c == priv:
            assert idp == (hid(PUB), relay_pid(i_own)), (r, idp)
            assert idq == clients[priv].procs[i_own], (r, idq)
            i_own += 1
        else:
            assert idp == clients[pub].procs[k_out], (r, idp)
            assert idq == (hid(PRIV), relay_pid(k_out)), (r, idq)
            k_out += 1
    return [vpub, vpriv] if pub == 0 else [vpriv, vpub]


def dance(clients, views):
    """(b) IMPI.md §4: every host connects to each lower host at the address its own client's
    view gives and sends its rank; every host accepts from each higher host and reads the rank.
    Returns conns[(a, b)]: host a's socket to host b."""
    H = len(views[0]["hosts"])
    owner = [h[3] for h in views[0]["hosts"]]
    conns = {}
    for me in range(H):
        v = views[owner[me]]
        for i in range(me):
            s = connect(v["hosts"][i][0], v["hosts"][i][1])
            s.sendall(struct.pack(">I", me))
            conns[(me, i)] = s
    for me in range(H):
        lst = clients[owner[me]].listeners[me - 2 * owner[me]]
        lst.settimeout(T)
        for _ in range(H - 1 - me):
            s, _ = lst.accept()
            track(s)
            r = struct.unpack(">I", recv_exact(s, 4))[0]
            assert me < r < H and (me, r) not in conns, (me, r)
            conns[(me, r)] = s
    assert len(conns) == H * (H - 1)
    return conns


def header(typ, ln, src, dst, msglen=0, srqid=0x0102030405060708, drqid=0x1112131415161718,
           tag=-120, cid=0x2122232425262728):
    return struct.pack(">II16sq16sqQQQiiQQqQQ", typ, ln, src[0], src[1], dst[0], dst[1], srqid,
                       drqid, msglen, 7, tag, cid, 0x3132333435363738, -1, 0x41, 0x51)


def owner_of(views, host):
    return views[0]["hosts"][host][3]


def packet(conns, views, a, b, rs, rd, typ, payload=b""):
    """(c) Host a sends rank rs -> rank rd a packet as its client names them; host b must get
    the same header with the ids its own client uses, and the same payload."""
    va, vb = views[owner_of(views, a)], views[owner_of(views, b)]
    data = typ in (PK_DATA, PK_DATASYNC)
    ln = len(payload) if data else 128  # LAM's 128 in pk_len of an ACK: it passes as it is
    ml = len(payload) + (5 if typ == PK_DATASYNC else 0) if data else 128
    hdr = header(typ, ln, va["procs"][rs][0], va["procs"][rd][0], ml)
    want = header(typ, ln, vb["procs"][rs][0], vb["procs"][rd][0], ml)
    err = []

    def sender():
        try:
            conns[(a, b)].sendall(hdr + payload)
        except OSError as e:
            err.append(e)

    t = threading.Thread(target=sender, daemon=True)
    t.start()
    got = recv_exact(conns[(b, a)], 128)
    assert got == want, f"host {a}->{b} type {typ}:\n got {got.hex()}\nwant {want.hex()}"
    if data:
        assert recv_exact(conns[(b, a)], len(payload)) == payload, "payload differs"
    t.join(T)
    assert not err and not t.is_alive(), err


def ranks_on(views, host):
    return [r for r, (_, h) in enumerate(views[0]["procs"]) if h == host]


def traffic(conns, views, pairs, big=True):
    """Every kind of packet both ways over each (a, b) pair of hosts."""
    small = bytes(range(256)) * 3 + b"end"
    large = os.urandom(1_000_000)  # > 64 KiB: the rest of it goes by splice(2)
    for a, b in pairs:
        ra, rb = ranks_on(views, a), ranks_on(views, b)
        for x, y, rx, ry in ((a, b, ra, rb), (b, a, rb, ra)):
            packet(conns, views, x, y, rx[0], ry[-1], PK_DATA, small)
            packet(conns, views, x, y, rx[-1], ry[0], PK_DATASYNC, b"")
            packet(conns, views, y, x, ry[0], rx[-1], PK_SYNCACK)
            packet(conns, views, y, x, ry[-1], rx[0], PK_PROTOACK)
            if big:
                packet(conns, views, x, y, rx[0], ry[0], PK_DATA, large)


def fini_hosts(conns, skip=()):
    """IMPI.md §5.4: every host sends FINI on each connection, reads the peer's, closes."""
    zero = (bytes(16), -1)
    fin = header(PK_FINI, 128, zero, zero, 128, 0, 0, 0, 0)
    live = {k: s for k, s in conns.items() if k not in skip and (k[1], k[0]) not in skip}
    for s in live.values():
        s.sendall(fin)
    for (a, b), s in live.items():
        assert recv_exact(s, 128) == fin, f"FINI {b}->{a} changed"
    for s in live.values():
        s.close()


def start(priv, relay_env=None, server_env=None):
    srv = Proc([SERVER, "-server", "2"], env={"WANMPI_LOG_LEVEL": "2", **(server_env or {})})
    m = srv.wait_for("out", r"^(\d+\.\d+\.\d+\.\d+):(\d+)$")
    sport = int(m.group(2))
    rel = Proc([RELAY, "-public", PUB, "-private", PRIV, f"127.0.0.1:{sport}"],
               env={"WANMPI_LOG_LEVEL": "2", **(relay_env or {})})
    m = rel.wait_for("out", r"^(\d+\.\d+\.\d+\.\d+):(\d+)$")
    assert m.group(1) == PRIV, m.group(0)
    raddr = (PRIV, int(m.group(2)))
    clients = [Client(c, PRIV_HOSTS if c == priv else PUB_HOSTS, [1, 2] if c == 0 else [2, 1])
               for c in range(2)]
    addrs = [raddr if c == priv else ("127.0.0.1", sport) for c in range(2)]
    return srv, rel, clients, addrs, raddr


def job_after_start(clients, addrs, priv, **startup_kw):
    """The start-up through the relay (views checked) and the dance: (agents, views, conns)."""
    agents, replies = startup(clients, addrs, **startup_kw)
    views = check_views(clients, replies, priv)
    return agents, views, dance(clients, views)


def running_job(priv, relay_env=None, server_env=None):
    """Server, relay and both scripted clients up to the end of the dance."""
    srv, rel, clients, addrs, _ = start(priv, relay_env, server_env)
    agents, views, conns = job_after_start(clients, addrs, priv)
    return srv, rel, agents, views, conns


def cross_pairs(priv):
    """(own host, outside host) pairs; hosts 0, 1 are client 0's and 2, 3 client 1's."""
    return [(a, b) for a in (0, 1) for b in (2, 3)]


def finish_job(srv, rel, agents, conns, skip=()):
    """(f): hosts FINI, agents FINI; server and relay exit 0."""
    fini_hosts(conns, skip)
    for s in agents:
        send_cmd(s, FINI)
    assert srv.finish() == 0, srv.text()
    assert rel.finish() == 0, rel.text()
    rel.wait_for("err", r"the job is over")


# ---- cases -------------------------------------------------------------------------------------

def run_job(priv, key=None):
    srv, rel, clients, addrs, _ = start(priv, server_env={"IMPI_AUTH_KEY": str(key)} if key else {})
    # The private client's agent sends its whole start-up at once (the relay must hold its host
    # and proc labels until its ports are allocated, and keep the rest in order).
    agents, views, conns = job_after_start(clients, addrs, priv, key=key, pipelined=(priv,))
    # Intra-cluster pairs are direct; the cross pairs go through the relay.
    packet(conns, views, 1, 0, ranks_on(views, 1)[0], ranks_on(views, 0)[0], PK_DATA, b"x")
    packet(conns, views, 3, 2, ranks_on(views, 3)[0], ranks_on(views, 2)[0], PK_DATA, b"y")
    traffic(conns, views, cross_pairs(priv))
    finish_job(srv, rel, agents, conns)
    m = re.search(r"forwarded (\d+) packets, (\d+) bytes \((\d+) spliced\)", rel.text())
    assert m, rel.text()
    assert int(m.group(1)) >= 4 * 2 * 5 + 4 * 2 and int(m.group(3)) > 0, m.group(0)


def case_startup_and_data():
    run_job(priv=1)


def case_private_first():
    run_job(priv=0, key=0x1122334455667788)


def cpu_seconds(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def case_slow_receiver():
    """Host 2 reads 8 MB of 1 MB packets from host 0 (the splice path) slowly: 1 MB, then a
    0.2 s pause, and so on. The relay holds what its buffers take and waits, without spinning
    (less than 0.3 s of CPU over the ~2 s of pauses, which stall it in every phase of a packet),
    the other direction keeps flowing, and every packet arrives translated and intact."""
    priv = 1
    srv, rel, agents, views, conns = running_job(priv)
    r0, r2 = ranks_on(views, 0), ranks_on(views, 2)
    v0, v1 = views
    msgs = [os.urandom(1_000_000 - 4099 * k) for k in range(8)] + [b"end"]
    stream = b"".join(header(PK_DATA, len(m), v0["procs"][r0[0]][0], v0["procs"][r2[0]][0],
                             len(m)) + m for m in msgs)
    want = b"".join(header(PK_DATA, len(m), v1["procs"][r0[0]][0], v1["procs"][r2[0]][0],
                           len(m)) + m for m in msgs)
    err = []

    def sender():
        try:
            conns[(0, 2)].settimeout(30)
            conns[(0, 2)].sendall(stream)
        except OSError as e:
            err.append(e)

    c0 = cpu_seconds(rel.p.pid)
    t = threading.Thread(target=sender, daemon=True)
    t.start()
    time.sleep(0.3)  # the buffers fill (the pass/fail check is on CPU use, not on time)
    # The other direction of the same pair is not held up by the stalled one.
    packet(conns, views, 2, 0, r2[0], r0[-1], PK_PROTOACK)
    packet(conns, views, 2, 0, r2[-1], r0[0], PK_DATA, b"still flowing")
    got = bytearray()
    s = conns[(2, 0)]
    while len(got) < len(want):
        time.sleep(0.2)
        got += recv_exact(s, min(1 << 20, len(want) - len(got)))
    used = cpu_seconds(rel.p.pid) - c0
    t.join(T)
    assert not err and not t.is_alive(), err
    assert got == want, "the stream differs"
    print(f"impi-relay used {used:.2f} s of CPU while the receiver stalled")
    assert used < 0.3, f"impi-relay spun while the receiver stalled: {used:.2f} s of CPU in 2 s"
    finish_job(srv, rel, agents, conns)


def case_hostile():
    priv = 1
    srv, rel, clients, addrs, raddr = start(priv, {"WANMPI_IMPI_JOIN_TIMEOUT": "2"})
    # Before the agent: garbage is not the agent.
    g = connect(*raddr)
    g.sendall(b"\xEE" * 64)
    assert closed(g)
    rel.wait_for("err", r"unexpected first command")
    silent = []

    def intruders():
        # The agent is connected and waiting for its IMPI reply.
        hostile = [
            b"GARB\x00\x00\x00\x04abcd",
            struct.pack(">Ii", AUTH, 4) + struct.pack(">I", 1),           # a second AUTH
            struct.pack(">Ii", AUTH, 0x7fffffff),                         # huge length
            struct.pack(">Ii", 0x12345678, -1) + b"\x00" * 32,            # huge length
            struct.pack(">Ii", TRNK, 36) + struct.pack(">I", 2) + bytes(32),  # bad version
            struct.pack(">Ii", TRNK, 5) + b"12345",                       # bad length
            struct.pack(">Ii", TRNK, 0x7fffffff),
        ]
        for h in hostile:
            s = connect(*raddr)
            s.sendall(h)
            assert closed(s), h
        s = connect(*raddr)
        s.sendall(b"AU")  # half a header, then silence
        silent.append(s)
        silent.append(connect(*raddr))  # nothing at all
        rel.wait_for("err", r"already connected")

    agents, views, conns = job_after_start(clients, addrs, priv, after_auth=intruders)
    for s in silent:
        assert closed(s, 4)
    rel.wait_count(r"said nothing within the join timeout", 2)
    rel.wait_count(r"unexpected first command", 8)
    # The data ports. Client 1 (private) has hosts 2, 3: its hosts reach hosts 0, 1 through
    # private ports; hosts 0, 1 reach 2, 3 through public ports.
    vpub, vpriv = views[0], views[1]
    priv_port = {h: vpriv["hosts"][h][1] for h in (0, 1)}
    pub_port = {h: vpub["hosts"][h][1] for h in (2, 3)}
    bad = [
        (PRIV, 0, 0, r"same side"),           # host 0 to itself
        (PRIV, 0, 1, r"same side"),           # an outside host to an outside host
        (PRIV, 1, 99, r"out of range"),
        (PRIV, 1, 0xFFFFFFFF, r"out of range"),
        (PRIV, 0, 2, r"already connected"),   # host 2's pair with host 0 exists
        (PRIV, 1, 3, r"already connected"),
        (PUB, 2, 0, r"must accept"),          # host 0 is below 2: 2 connects to it
        (PUB, 3, 1, r"must accept"),
        (PUB, 2, 3, r"same side"),
        (PUB, 3, 4, r"out of range"),
    ]
    for ip, rep, rank, why in bad:
        regex = rf"to the port of host {rep}: .*{why}.*; closed"
        n = rel.count(regex)
        s = connect(ip, (priv_port if ip == PRIV else pub_port)[rep])
        s.sendall(struct.pack(">I", rank))
        assert closed(s), (ip, rep, rank)
        rel.wait_count(regex, n + 1)
    quiet = [connect(PRIV, priv_port[0]), connect(PUB, pub_port[3])]
    quiet[1].sendall(b"\x00\x00")  # half a rank
    for s in quiet:
        assert closed(s, 4)
    rel.wait_count(r"sent no host rank within the join timeout", 2)
    rel.wait_count(r"to the port of host \d+: .*; closed", len(bad) + 2)
    # No host saw any of it: no listener has a connection waiting.
    for c in clients:
        for l in c.listeners:
            l.settimeout(0.2)
            try:
                l.accept()
                raise AssertionError("an intruder reached a host")
            except socket.timeout:
                pass
    traffic(conns, views, cross_pairs(priv), big=False)
    finish_job(srv, rel, agents, conns)


def case_forbidden_proc():
    priv = 1
    srv, rel, agents, views, conns = running_job(priv)
    vpriv, vpub = views[1], views[0]
    r2, r3, r0, r1 = (ranks_on(views, h) for h in (2, 3, 0, 1))
    # Outward on pair (2, 0): the source is host 3's proc.
    conns[(2, 0)].sendall(header(PK_DATA, 4, vpriv["procs"][r3[0]][0], vpriv["procs"][r0[0]][0], 4)
                          + b"evil")
    assert closed(conns[(0, 2)]) and closed(conns[(2, 0)])
    rel.wait_for("err", r"pair host 2 \(client 1\) <-> host 0 \(client 0\): from host 2: packet "
                        r"type 0 from a proc that host 2 does not carry")
    # Inward on pair (3, 1): the destination is host 2's proc (by its outside id).
    conns[(1, 3)].sendall(header(PK_SYNCACK, 128, vpub["procs"][r1[0]][0], vpub["procs"][r2[0]][0]))
    assert closed(conns[(3, 1)]) and closed(conns[(1, 3)])
    rel.wait_for("err", r"pair host 3 \(client 1\) <-> host 1 \(client 0\): from host 1: packet "
                        r"type 3 for a proc that host 3 does not carry")
    # An unknown proc on pair (3, 0), after a good packet.
    packet(conns, views, 3, 0, r3[0], r0[0], PK_DATA, b"fine")
    conns[(3, 0)].sendall(header(PK_PROTOACK, 128, (hid("10.9.9.9"), 1), vpriv["procs"][r0[0]][0]))
    assert closed(conns[(0, 3)]) and closed(conns[(3, 0)])
    rel.wait_for("err", r"pair host 3 \(client 1\) <-> host 0 \(client 0\).*does not carry")
    # The last pair is untouched.
    traffic(conns, views, [(1, 2)], big=False)
    broken = [(2, 0), (3, 1), (3, 0)]
    finish_job(srv, rel, agents, conns, skip=broken)


def case_relay_dies():
    priv = 1
    srv, rel, agents, views, conns = running_job(priv)
    traffic(conns, views, [(0, 2)], big=False)
    t0 = time.monotonic()
    rel.p.send_signal(signal.SIGKILL)
    rc = srv.finish(timeout=5)
    took = time.monotonic() - t0
    assert rc != 0 and took < 5, (rc, took)
    assert re.search(r"client 1 .*closed the connection before FINI", srv.text()), srv.text()
    cmd, p = recv_cmd(agents[0])
    assert cmd == LOST and struct.unpack(">I", p[:4])[0] == 1, (hex(cmd), p)
    for (a, b), s in conns.items():
        if (a >= 2) != (b >= 2):  # through the relay
            assert closed(s, 2), (a, b)


def case_join_hosts_fail():
    """A trunk relay that the primary starts itself (-join-hosts) and that cannot start takes
    the relay down at once, naming the host, instead of waiting for the start-up timeout."""
    srv = Proc([SERVER, "-server", "2"], env={"WANMPI_LOG_LEVEL": "2"})
    m = srv.wait_for("out", r"^(\d+\.\d+\.\d+\.\d+):(\d+)$")
    t0 = time.monotonic()
    rel = Proc([RELAY, "-public", PUB, "-private", PRIV, "-join-hosts", "fe1.invalid",
                "-launcher-exec", "false", f"127.0.0.1:{m.group(2)}"],
               env={"WANMPI_LOG_LEVEL": "1"})
    rel.wait_for("out", r"^(\d+\.\d+\.\d+\.\d+):(\d+)$")
    rc = rel.finish(timeout=5)
    assert rc != 0 and time.monotonic() - t0 < 5, (rc, rel.text())
    assert re.search(r"trunk relay on fe1\.invalid .*exit", rel.text()), rel.text()
    srv.p.terminate()


def case_cut_header():
    import random
    rnd = random.Random(6)
    srv, rel, agents, views, conns = running_job(1)
    r0, r2 = ranks_on(views, 0), ranks_on(views, 2)
    v0, v1 = views
    s_out, s_in = conns[(0, 2)], conns[(2, 0)]
    for rnd_no in range(4):
        # ~11 MB a round: more than the kernel's socket buffers on the way can hold, so that
        # the relay's own buffer for this direction fills while host 2 does not read.
        msgs = [rnd.randbytes(rnd.randrange(0, 300)) for _ in range(40000)]
        src, dst = r0[rnd_no % len(r0)], r2[-1]
        stream = b"".join(header(PK_DATA, len(m), v0["procs"][src][0], v0["procs"][dst][0],
                                 len(m)) + m for m in msgs)
        want = b"".join(header(PK_DATA, len(m), v1["procs"][src][0], v1["procs"][dst][0],
                               len(m)) + m for m in msgs)
        err = []

        def sender():
            try:
                s_out.settimeout(30)
                s_out.sendall(stream)
            except OSError as e:
                err.append(e)

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        time.sleep(0.3)
        got = recv_exact(s_in, len(want))
        t.join(T)
        assert not err and not t.is_alive(), (rnd_no, err)
        assert got == want, f"round {rnd_no}: the stream differs"
    finish_job(srv, rel, agents, conns)


def case_state_refused():
    import tempfile
    d = tempfile.mkdtemp(prefix="relay-state-test-")
    secret = os.path.join(d, "secret")
    with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("relay-state-test-secret-0123456789abcdef\n")
    state = os.path.join(d, "state")
    # A syntactically complete state file whose MAC was not made with this secret.
    forged = ("wanmpi-relay-state 1\nserver 127.0.0.1:9\nclient 1\npublic 127.0.0.1\n"
              "private 127.0.0.2\nport 4000\nflags 0\nsession " + "00" * 32 + "\nports 4001\n"
              "out AAAA\nin AAAA\nmac " + "ab" * 32 + "\n")
    cases = [  # (file text or None for no file, mode, env, extra args, expected message)
        ("garbage\n", 0o600, True, [], r"not an impi-relay state file"),
        ("garbage\n", 0o644, True, [], r"permissions 0644 let others read or change it"),
        (forged, 0o600, True, [], r"MAC does not verify with this job secret"),
        (None, 0o600, False, [], r"-state needs the job secret"),
        # A trunk member with -state needs the secret as well (it proves itself with it).
        (None, 0o600, False, ["-join", "127.0.0.1:9"], r"-state needs the job secret"),
    ]
    try:
        for text, mode, with_secret, extra, want in cases:
            if os.path.exists(state):
                os.unlink(state)
            if text is not None:
                with open(os.open(state, os.O_WRONLY | os.O_CREAT, mode), "w") as f:
                    f.write(text)
                os.chmod(state, mode)
            env = {"WANMPI_JOB_SECRET_FILE": secret} if with_secret else {}
            t0 = time.monotonic()
            member = "-join" in extra
            rel = Proc([RELAY, "-public", PUB, "-private", PRIV, "-state", state] + extra +
                       ([] if member else ["127.0.0.1:9"]), env=env)
            rc = rel.finish(timeout=5)
            assert rc == 2 and time.monotonic() - t0 < 5, (want, rc, rel.text())
            assert re.search(want, rel.text()), (want, rel.text())
            assert text is None or os.path.exists(state), "a refused state file was removed"
    finally:
        import shutil
        shutil.rmtree(d, ignore_errors=True)


CASES = {
    "cut_header": case_cut_header,
    "state_refused": case_state_refused,
    "join_hosts_fail": case_join_hosts_fail,
    "startup_and_data": case_startup_and_data,
    "private_first": case_private_first,
    "slow_receiver": case_slow_receiver,
    "hostile": case_hostile,
    "forbidden_proc": case_forbidden_proc,
    "relay_dies": case_relay_dies,
}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(__doc__)
        sys.exit(2)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    t0 = time.monotonic()
    try:
        CASES[sys.argv[1]]()
        if os.environ.get("RELAY_TEST_VERBOSE"):
            raise SystemExit(0)
    except BaseException as e:
        for pr in PROCS:
            sys.stderr.write(f"---- {pr.p.args[0]}:\n{pr.text()}\n")
        if not (isinstance(e, SystemExit) and e.code == 0):
            raise
    finally:
        cleanup()
    print(f"{sys.argv[1]}: ok ({time.monotonic() - t0:.1f} s)")
