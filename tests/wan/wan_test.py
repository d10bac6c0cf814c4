#!/usr/bin/env python3
"""tests/wan driver: the shared wanemu run (CTest fixture) and one multi-cluster job per test.

  wan_test.py up   WANEMU RUN TOPOLOGY     fixture setup: (re)create run RUN, taken down by
                                           wanemu itself if ctest dies (--watch-pid <ctest>)
  wan_test.py down WANEMU RUN              fixture clean-up: no process may be left in the
                                           run's namespaces; take it down; no namespace of it
                                           may remain
  wan_test.py job  WANEMU RUN SITES [--expect pass|fail] [--regex RE] [--stats CHECKS]
                   -- SITES-ARGS...        one job: `SITES --run RUN SITES-ARGS`, judged by its
                                           exit status and output

--stats CHECKS runs the job with WANMPI_WAN_STATS=<a temporary CSV> and checks what rank 0
wrote there, read from the sockets themselves (TCP_INFO, getsockopt): CHECKS is a comma list of
rows=N (connection ends), pacing=BPS (every row's pacing_bps within 0.5 %), cc=NAME (every
row's congestion control), traffic (every row moved bytes), zsent=I-J (some rank of cluster I
sent compressed payloads to cluster J) and zoff=K (nothing compressed on the links of cluster K);
both z checks also demand that each end decoded exactly what the other compressed. spread
(striping over lanes, issue 14): on every link end that sent 8 MiB or more, each lane sent at
least a quarter of its equal share (spread=PCT: PCT % of it). onelane=PCT (a collective context is one lane stream,
issue 12): on every link end that sent 200 packets or more, one lane sent at least PCT % of
them; lanespread=PCT (user point-to-point streams keep a lane per tag): on every such link end,
every lane sent at least PCT % of them. Both count packets (msgs_sent) and fail if no link end
sent 200, since then they would judge nothing. notwice: no small message was sent twice
(WANMPI_WAN_TWICE=auto must not take a spurious retransmission for a loss).

--kill-every S cuts the job's connections between clusters every S seconds while it runs, as a
NAT or firewall that drops its state does: `ss -K` in every host namespace of the run, on the
established TCP connections from a host to a host of another cluster (not those to
or from impi-server's port, which the job prints). It reports how many it cut; a test that
uses it checks the job's output for its reconnects (issue 13).

--capture NS:MARKER:present|absent sniffs every packet in namespace wn.RUN.NS (a router, e.g.
c0.rt) with a raw socket while the job runs and counts the packets whose bytes contain MARKER:
`absent` fails if one does (or if fewer than 1 MB were seen: the capture must have worked),
`present` fails if none does.

--stranger PROG connects, while the job runs, from another cluster's host to every listening
TCP port of the processes named PROG in each host namespace (the ranks' IMPI host sockets),
and on each: sends a claimed host rank 1 and a well-formed wanmpi link HELLO with a made-up
proof; sends garbage; stays silent. The job must go on; the test's regex checks that the
ranks logged the refusals.

--outage LINK:SECS:REGEX makes wanemu link LINK (e.g. c0-c1) drop every packet for SECS
seconds (`wanemu set LINK loss=100%,for=SECSs`), once, as soon as a line of the job's output
matches REGEX (so that the outage falls on traffic in flight); the test's regex then checks how
the ranks resumed (issue 12). The job fails the test if REGEX never appeared.

--firewall C:LO:HI gives every host of cluster C, for the job's duration, a firewall that lets
at most one TCP connection at a time from each address into ports LO..HI (iptables connlimit
on new connections): with the cluster's WANMPI_IMPI_PORT_RANGE=LO:HI, the dance's connection
passes and a link's extra lanes cannot be opened (issue 14: the link goes on with fewer).

A job passes with `--expect pass` when wanmpi-sites exits 0 and the output matches RE (default
" No Errors"); with `--expect fail` when it exits non-zero (not by a timeout), every other cluster ended by
itself within wanmpi-sites' --grace after the first failure, and the output matches RE if given. In both cases nothing of the job may be left running (wanmpi-sites
checks that itself and says "left running"), and the exit must not be wanmpi-sites' own
set-up failure (125). Exit 77 (skip) without root.
"""
import csv
import os
import re
import subprocess
import sys
import tempfile
import threading
import time


def need_root():
    if os.geteuid() != 0:
        print("wan_test: needs root (wanemu); skipped")
        sys.exit(77)


def run_netns(run):
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return [l.split()[0] for l in r.stdout.splitlines() if l.startswith(f"wn.{run}.")]


def cmd_up(wanemu, run, topo):
    need_root()
    # A run of this name left by a killed earlier ctest: take it down first.
    lst = subprocess.run([wanemu, "list"], capture_output=True, text=True).stdout
    if re.search(rf"^\s*{re.escape(run)}\b", lst, re.M) or run_netns(run):
        print(f"wan_test: taking down the run {run} left by an earlier session")
        subprocess.run([wanemu, "down", "--name", run], timeout=90)
        # (down --name also deletes the run's namespaces that outlived its state. Never
        # `wanemu down --all` here: it also cleans up other people's runs whose controller it
        # takes for dead, and the namespaces of runs being brought up at this moment.)
    r = subprocess.run([wanemu, "up", "--name", run, "--watch-pid", str(os.getppid()), topo],
                       timeout=120)
    if r.returncode != 0:
        print(f"wan_test: wanemu up failed ({r.returncode})")
        return 1
    return 0


def netns_procs(run):
    """(namespace, pid, command line) of every process still in the run's namespaces."""
    left = []
    for ns in run_netns(run):
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split()
        for pid in pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                cmd = "?"
            left.append((ns, int(pid), cmd[:120]))
    return left


def cmd_down(wanemu, run):
    need_root()
    bad = [f"{ns}: pid {pid} {cmd[:100]}" for ns, pid, cmd in netns_procs(run)]
    r = subprocess.run([wanemu, "down", "--name", run], timeout=120)
    left = run_netns(run)
    ok = True
    if bad:
        print("wan_test: processes were left in the sites' namespaces:\n  " + "\n  ".join(bad))
        ok = False
    if r.returncode != 0:
        print(f"wan_test: wanemu down failed ({r.returncode})")
        ok = False
    if left:
        print("wan_test: namespaces left after wanemu down: " + " ".join(left))
        ok = False
    print("wan_test: sites down, nothing left" if ok else "wan_test: FAIL")
    return 0 if ok else 1


def check_stats(path, checks):
    """What is wrong with the WANMPI_WAN_STATS CSV at `path` against CHECKS, or None."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        return f"no statistics file: {e}"
    # The cluster of every rank, from the rows that name it as a peer.
    cluster = {r["peer_rank"]: r["peer_cluster"] for r in rows}
    for c in checks.split(","):
        key, _, val = c.partition("=")
        if key == "rows" and len(rows) != int(val):
            return f"{len(rows)} statistics rows, expected {val}"
        if key == "spread":
            ends = {}
            for r in rows:
                ends.setdefault((r["rank"], r["peer_rank"]), []).append(int(r["bytes_sent"]))
            # spread=PCT: at least PCT % of the equal share (default 25). Without striping
            # the other lanes carry only control packets (a few KB of 8 MiB and more).
            pct = int(val) if val else 25
            for (a, b), sent in ends.items():
                total = sum(sent)
                if total >= 8 << 20 and min(sent) * 100 < total * pct / len(sent):
                    return (f"rank {a} -> {b}: lanes sent {sent} bytes: not spread over its "
                            f"{len(sent)} lanes (one below {pct} % of an equal share)")
        if key in ("onelane", "lanespread"):
            # Packets, not bytes: what is judged is which lane each message's header took.
            # Besides the traffic under test a link end sends control packets: a PROTOACK on
            # lane 0 per IMPI_H_ACKMARK packets received (16: about 6 % when the traffic is
            # symmetric), a FINI on every lane, a PK_WAN_ACK per 256 KiB of a lane's stream.
            # Hence shares with margin both ways rather than exact counts: one collective
            # stream puts about 94 % on its lane (100 % when it is lane 0), tags hashed over 4
            # lanes about 25 % each. Small link ends (a rank that is no cluster's master sends
            # no collective data over the WAN) carry only control traffic and are not judged.
            ends = {}
            for r in rows:
                ends.setdefault((r["rank"], r["peer_rank"]), {})[int(r["lane"])] = \
                    int(r["msgs_sent"])
            big = {e: l for e, l in ends.items() if sum(l.values()) >= 200}
            if not big:
                return f"{key}: no link end sent 200 packets: nothing to judge"
            for (a, b), lanes in sorted(big.items()):
                total = sum(lanes.values())
                sent = [lanes[i] for i in sorted(lanes)]
                if key == "onelane" and max(sent) * 100 < total * int(val):
                    return (f"rank {a} -> {b}: lanes sent {sent} packets: no lane sent "
                            f"{val} % of them (a collective context spread over lanes?)")
                if key == "lanespread" and (len(sent) < 2 or min(sent) * 100 < total * int(val)):
                    return (f"rank {a} -> {b}: lanes sent {sent} packets: some lane sent less "
                            f"than {val} % of them (tags not spread over the lanes?)")
        if key in ("zsent", "zoff"):
            # Compression: what one end sent compressed, the other decoded, byte for byte.
            # (One row per lane: what lane i of one end sent, lane i of the other received.)
            back = {(r["rank"], r["peer_rank"], r.get("lane", "0")): r for r in rows}
            for r in rows:
                o = back.get((r["peer_rank"], r["rank"], r.get("lane", "0")))
                if o and (r["z_sent"], r["z_raw_sent"]) != (o["z_recv"], o["z_raw_recv"]):
                    return (f"rank {r['rank']} -> {r['peer_rank']}: sent {r['z_sent']} compressed "
                            f"bytes, its peer decoded {o['z_recv']}")
        if key == "zsent":
            # zsent=I-J: some rank of cluster I sent compressed payloads to cluster J.
            i, _, j = val.partition("-")
            if not any(cluster.get(r["rank"]) == i and r["peer_cluster"] == j and
                       int(r["z_sent"]) > 0 for r in rows):
                return f"no compressed payload went from cluster {i} to cluster {j}"
        if key == "zoff":
            # zoff=K: nothing compressed to or from cluster K.
            for r in rows:
                if cluster.get(r["rank"]) == val or r["peer_cluster"] == val:
                    if int(r["z_sent"]) or int(r["z_recv"]):
                        return (f"rank {r['rank']} -> {r['peer_rank']}: compressed payloads on a "
                                f"link of cluster {val}, which has compression off")
        if key == "notwice":
            # WANMPI_WAN_TWICE=auto on a lossless link: no copy may go (a retransmission the
            # receiver reported as a duplicate is not a loss; wanlink::LossWatch).
            twice = {(r["rank"], r["peer_rank"]): 0 for r in rows}
            for r in rows:
                twice[(r["rank"], r["peer_rank"])] += int(r["twice_sent"])
            sent = {e: n for e, n in twice.items() if n}
            if sent:
                return ("small messages sent twice on a lossless link (retransmissions taken "
                        f"for losses?): {', '.join(f'rank {a} -> {b}: {n}' for (a, b), n in sorted(sent.items()))}")
        for r in rows:
            end = f"rank {r['rank']} -> {r['peer_rank']}"
            if key == "pacing" and abs(int(r["pacing_bps"]) - int(val)) > int(val) * 0.005:
                return f"{end}: pacing {r['pacing_bps']} bit/s on the socket, expected {val}"
            if key == "cc" and r["cc"] != val:
                return f"{end}: congestion control {r['cc']!r}, expected {val!r}"
            if key == "traffic" and int(r["bytes_sent"]) + int(r["bytes_recv"]) == 0:
                return f"{end}: no bytes counted"
    return None


def cmd_job(wanemu, run, sites, rest):
    need_root()
    expect, regex, stats, kill_every = "pass", None, None, None
    capture = stranger = loss = firewall = outage = None
    while rest and rest[0] != "--":
        if rest[0] == "--expect":
            expect = rest[1]
        elif rest[0] == "--regex":
            regex = rest[1]
        elif rest[0] == "--stats":
            stats = rest[1]
        elif rest[0] == "--kill-every":
            kill_every = float(rest[1])
        elif rest[0] == "--capture":
            capture = rest[1]
        elif rest[0] == "--stranger":
            stranger = rest[1]
        elif rest[0] == "--loss":
            loss = rest[1]
        elif rest[0] == "--firewall":
            firewall = rest[1]
        elif rest[0] == "--outage":
            outage = rest[1]
        else:
            print(f"wan_test: unknown option {rest[0]}")
            return 2
        rest = rest[2:]
    args = rest[1:]
    if expect == "pass" and regex is None:
        regex = " No Errors"
    if not run_netns(run):
        print(f"wan_test: the sites (wanemu run {run}) are not up: the fixture test "
              "wan.sites.up must run first (ctest adds it unless -FS is given)")
        return 1
    stats_file = None
    if stats:
        fd, stats_file = tempfile.mkstemp(prefix="wan_stats.", suffix=".csv")
        os.close(fd)
        os.unlink(stats_file)  # rank 0 creates it; absent = not written
        args = ["-x", f"WANMPI_WAN_STATS={stats_file}", *args]
    cmd = [sys.executable, sites, "--run", run, *args]
    print("wan_test: running: " + " ".join(cmd), flush=True)
    env = dict(os.environ, WANEMU_RUN=run)
    if loss:
        # Random loss on one link of the shared sites for the job's duration (other jobs that
        # cross it meanwhile only slow down); the link's loss is 0 again afterwards.
        link, pct = loss.split("=")
        subprocess.run([wanemu, "set", "--name", run, link, f"loss={pct}"], check=True)
    fw_rules = []
    if firewall:
        c, lo, hi = firewall.split(":")
        rule = ["INPUT", "-p", "tcp", "--syn", "--dport", f"{lo}:{hi}", "-m", "connlimit",
                "--connlimit-above", "1", "--connlimit-mask", "32", "-j", "DROP"]
        for ns in run_netns(run):
            if re.match(rf"wn\.{re.escape(run)}\.{re.escape(c)}h\d+$", ns):
                subprocess.run(["ip", "netns", "exec", ns, "iptables", "-A", *rule], check=True)
                fw_rules.append((ns, rule))
        if not fw_rules:
            print(f"wan_test: --firewall: no host of cluster {c} in run {run}")
            return 1
    try:
        if kill_every is None and capture is None and stranger is None and outage is None:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
            out = p.stdout.decode(errors="replace")
            rc = p.returncode
        else:
            out, rc = run_watched(cmd, env, run, kill_every, capture, stranger,
                                  (wanemu, outage) if outage else None)
    finally:
        if loss:
            subprocess.run([wanemu, "set", "--name", run, link, "loss=0"])
        for ns, rule in fw_rules:
            subprocess.run(["ip", "netns", "exec", ns, "iptables", "-D", *rule])
    sys.stdout.write(out)
    why = None
    if "left running" in out:
        why = "processes of the job were left running"
    elif rc == 125:
        why = "wanmpi-sites could not set the job up (exit 125)"
    elif expect == "pass":
        if rc != 0:
            why = f"exit status {rc}, expected 0"
        elif regex and not re.search(regex, out):
            why = f"output does not match {regex!r}"
        elif stats:
            why = check_stats(stats_file, stats)
    else:
        if rc == 0:
            why = "exit status 0, expected the job to fail"
        elif rc == 124:
            why = "the job hung until the timeout instead of failing"
        elif "did not end within" in out:
            why = "after the failure the other clusters did not end by themselves"
        elif regex and not re.search(regex, out):
            why = f"the job failed (exit {rc}) but the output does not match {regex!r}"
    if stats_file and os.path.exists(stats_file):
        with open(stats_file) as f:
            sys.stdout.write(f.read())
        os.unlink(stats_file)
    if why:
        print(f"wan_test: FAIL: {why}")
        return 1
    print(f"wan_test: PASS (exit {rc})")
    return 0


def ns_addr(ns):
    """The IPv4 address of eth0 in namespace ns, or None."""
    a = subprocess.run(["ip", "netns", "exec", ns, "ip", "-4", "-o", "addr", "show", "eth0"],
                       capture_output=True, text=True).stdout.split()
    return a[3].split("/")[0] if len(a) > 3 else None


def cut_links(run, server_port):
    """ss -K the inter-cluster TCP connections of every host namespace; returns how many.
    wanemu gives run k the addresses 10.(100+k).C.x (cluster C): the run's /16 minus the
    host's own cluster /24 is the other clusters."""
    cut = 0
    for ns in run_netns(run):
        if not re.match(rf"wn\.{re.escape(run)}\.c(\d+)h\d+$", ns):
            continue
        addr = ns_addr(ns)
        if not addr:
            continue
        o = addr.split(".")
        filt = (f"( dst {o[0]}.{o[1]}.0.0/16 and not dst {o[0]}.{o[1]}.{o[2]}.0/24 "
                f"and not dport = :{server_port} and not sport = :{server_port} )")
        r = subprocess.run(["ip", "netns", "exec", ns, "ss", "-K", "-t", "-n", "-H",
                            "state", "established", filt], capture_output=True, text=True)
        cut += len([l for l in r.stdout.splitlines() if l.strip()])
    return cut


SNIFF = r'''
import socket, sys, select, time
marker, out = sys.argv[1].encode(), sys.argv[2]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
n = hits = nbytes = 0
with open(out + ".ready", "w"):
    pass
while True:
    r, _, _ = select.select([s, sys.stdin], [], [], 0.2)
    if sys.stdin in r:
        break
    if s in r:
        b = s.recv(65536)
        n += 1
        nbytes += len(b)
        if marker in b:
            hits += 1
with open(out, "w") as f:
    f.write(f"{n} {nbytes} {hits}")
'''

STRANGER = r'''
import os, socket, struct, sys
for target in sys.argv[1:]:
    addr, port = target.rsplit(":", 1)
    for kind in ("hello", "garbage", "silent"):
        try:
            c = socket.create_connection((addr, int(port)), timeout=3)
            if kind == "hello":
                hello = (b"WLNK" + bytes([3, 13, 1, 0]) + struct.pack(">IIQII", 1, 0, 0, 1, 0)
                         + os.urandom(32))
                c.sendall(struct.pack(">I", 1) + hello)
                c.settimeout(3)
                try:
                    c.recv(96)
                except OSError:
                    pass
                c.sendall(os.urandom(32))
            elif kind == "garbage":
                c.sendall(os.urandom(200))
            c.settimeout(1)
            try:
                c.recv(1)
            except OSError:
                pass
            c.close()
            print(f"stranger: {kind} to {target} done", flush=True)
        except OSError as e:
            print(f"stranger: {kind} to {target}: {e}", flush=True)
'''


def stranger_targets(run, prog):
    """addr:port of every listening socket of a process named prog in the run's hosts."""
    out = []
    for ns in run_netns(run):
        if not re.match(rf"wn\.{re.escape(run)}\.c\d+h\d+$", ns):
            continue
        r = subprocess.run(["ip", "netns", "exec", ns, "ss", "-ltnpH"], capture_output=True,
                           text=True)
        addr = ns_addr(ns)
        for line in r.stdout.splitlines():
            if f'(("{prog}"' not in line:
                continue
            local, port = line.split()[3].rsplit(":", 1)
            # A socket bound to one address (impi-relay's public and private ports) is tried
            # there; a wildcard one at the host's address.
            if local not in ("*", "0.0.0.0", "[::]"):
                out.append(f"{local}:{port}")
            elif addr:
                out.append(f"{addr}:{port}")
    return out


def run_watched(cmd, env, run, every, capture, stranger, outage=None):
    sniffer = None
    if capture:
        ns, marker, want = capture.split(":")
        fd, cap_out = tempfile.mkstemp(prefix="wan_capture.")
        os.close(fd)
        os.unlink(cap_out)
        sniffer = subprocess.Popen(["ip", "netns", "exec", f"wn.{run}.{ns}", sys.executable, "-c",
                                    SNIFF, marker, cap_out], stdin=subprocess.PIPE)
        for _ in range(50):
            if os.path.exists(cap_out + ".ready"):
                break
            time.sleep(0.1)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    lines = []
    port = [None]
    cut = [None]  # the outage: not yet / the monotonic time it began
    if outage:
        o_wanemu, o_spec = outage
        o_link, o_secs, o_regex = o_spec.split(":", 2)

    def reader():
        for raw in p.stdout:
            line = raw.decode(errors="replace")
            lines.append(line)
            if outage and cut[0] is None and re.search(o_regex, line):
                cut[0] = time.monotonic()
                subprocess.run([o_wanemu, "set", "--name", run, o_link,
                                f"loss=100%,for={o_secs}s"], stdout=subprocess.DEVNULL)
                lines.append(f"wan_test: link {o_link} drops everything for {o_secs} s\n")
            m = re.search(r"impi-server for \d+ clusters .* at [\d.]+:(\d+)", line)
            if m and port[0] is None:
                port[0] = m.group(1)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    rounds = total = 0
    started = time.monotonic()
    next_cut = started + (every or 0)
    stranger_done = stranger is None
    while p.poll() is None:
        time.sleep(0.1)
        if every and port[0] is not None and time.monotonic() >= next_cut:
            n = cut_links(run, port[0])
            rounds += 1
            total += n
            next_cut = time.monotonic() + every
        if not stranger_done and port[0] is not None and time.monotonic() - started > 3:
            stranger_done = True
            targets = stranger_targets(run, stranger)
            hosts = [ns for ns in run_netns(run) if re.search(r"\.c1h0$", ns)]
            r = subprocess.run(["ip", "netns", "exec", hosts[0], sys.executable, "-c", STRANGER,
                                *targets], capture_output=True, text=True, timeout=60)
            lines.append(f"wan_test: stranger tried {len(targets)} host sockets\n" + r.stdout)
    t.join()
    if outage and cut[0] is None:
        lines.append(f"wan_test: --outage: no line matched {o_regex!r}; no outage\n")
        rc = rc or 3
    if every:
        lines.append(f"wan_test: cut {total} inter-cluster connection ends in {rounds} rounds "
                     f"(every {every:g} s)\n")
    rc = p.returncode
    if sniffer:
        sniffer.stdin.close()
        sniffer.wait(10)
        try:
            with open(cap_out) as f:
                n, nbytes, hits = map(int, f.read().split())
            os.unlink(cap_out)
            os.unlink(cap_out + ".ready")
        except (OSError, ValueError):
            n = nbytes = hits = -1
        lines.append(f"wan_test: capture in {ns}: {n} packets, {nbytes} bytes, {hits} with the "
                     f"marker\n")
        if want == "absent" and (hits != 0 or nbytes < 1000000):
            lines.append("wan_test: capture: the marker must be absent (and >= 1 MB captured)\n")
            rc = rc or 3
        if want == "present" and hits <= 0:
            lines.append("wan_test: capture: the marker must be present\n")
            rc = rc or 3
    return "".join(lines), rc


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    what, wanemu, run = argv[0], argv[1], argv[2]
    if what == "up" and len(argv) == 4:
        return cmd_up(wanemu, run, argv[3])
    if what == "down" and len(argv) == 3:
        return cmd_down(wanemu, run)
    if what == "job" and len(argv) >= 4:
        return cmd_job(wanemu, run, argv[3], argv[4:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
