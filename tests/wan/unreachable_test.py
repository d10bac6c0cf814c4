#!/usr/bin/env python3
"""tests/wan: a private-address cluster WITHOUT impi-relay must fail the job fast and clearly.

  unreachable_test.py WANEMU SITES BINDIR RUN PROGRAM

Brings up its own wanemu run RUN (2 clusters of 2 hosts, c1 private, 2 ms; taken down by wanemu
itself if this script dies: --watch-pid), then runs PROGRAM (any MPI program) as one job of 2+2
ranks, spread over each cluster's hosts, twice: c0,c1 (the private compute host c1h1 is the
higher host and has no route out: its connect fails at once) and c1,c0 (the private cluster is
client 0: the public hosts' connects to its private addresses come back "Network is unreachable"
from their router). Each time the job must end by itself, non-zero, within 10 s (everything: the
failing cluster, the cluster that only waits to accept, impi-server), and the output must name
the unreachable host and its address and say "impi-relay". Finally the run is taken down, and no
process may be left in its namespaces and no namespace of it may remain.

The job is started with SITES (wanmpi-sites --run RUN --bin BINDIR -n 2) when that does not put
an impi-relay in front of private clusters by itself (or can be told not to: --no-relay);
otherwise the script does what wanmpi-sites would do without a relay: impi-server on c0's
front-end, then one `mpirun -client I ADDR:PORT -n 2 --host FE,COMPUTE` per cluster on the
cluster's front-end (wanemu exec).

Exit 0: pass; 1: fail; 77: skipped (not root).
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wan_test import netns_procs, run_netns  # noqa: E402

LIMIT = 10.0  # seconds from the start of a job to the exit of its last process


def log(msg):
    print(f"unreachable_test: {msg}", flush=True)


def kill_group(p):
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def start(cmd, env, out, tag):
    """A process in its own session; its output lines go to `out` (a list) as they arrive."""
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def pump():
        for raw in iter(p.stdout.readline, b""):
            out.append(f"{tag}{raw.decode(errors='replace').rstrip()}")
        p.stdout.close()

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    p.pump = t
    return p


def sites_mode(sites):
    """'sites' (wanmpi-sites adds no relay), 'sites-norelay' (it can be told not to) or
    'direct' (it would put impi-relay in front of the private cluster)."""
    h = subprocess.run([sys.executable, sites, "--help"], capture_output=True, text=True)
    text = h.stdout + h.stderr
    if "--no-relay" in text:
        return "sites-norelay"
    return "direct" if "impi-relay" in text else "sites"


def job_with_sites(sites, bindir, run, order, program, mode, env):
    out = []
    cmd = [sys.executable, sites, "--run", run, "--bin", bindir, "--clusters", order, "-n", "2",
           "--timeout", "40", "--grace", "8"]
    if mode == "sites-norelay":
        cmd.append("--no-relay")
    cmd += ["--", program]
    log("running: " + " ".join(cmd))
    t0 = time.monotonic()
    p = start(cmd, env, out, "")
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        kill_group(p)
        rc = None
    elapsed = time.monotonic() - t0
    p.pump.join(5)
    return rc, elapsed, out


def job_direct(wanemu, bindir, run, order, program, env):
    """impi-server on the first cluster's front-end, one mpirun -client per cluster, no relay."""
    out = []
    clusters = order.split(",")
    hosts = {}
    private = set()
    kv = subprocess.run([wanemu, "hosts", "--kv", "--name", run], capture_output=True,
                        text=True).stdout
    for line in kv.splitlines():
        f = dict(x.split("=", 1) for x in line.split() if "=" in x)
        if "host" in f and "cluster" in f:
            hosts.setdefault(f["cluster"], []).append((f.get("role") == "frontend", f["host"]))
            if f.get("private", "-") != "-":
                private.add(f["cluster"])
    for c in clusters:
        if c not in hosts:
            log(f"FAIL: run {run} has no cluster {c}: {kv!r}")
            return None, 0.0, out
        hosts[c].sort(key=lambda x: not x[0])  # front-end first
    # impi-server where every cluster's front-end reaches it: a public cluster's front-end.
    server_fe = next(hosts[c][0][1] for c in clusters if c not in private)
    procs = []
    t0 = time.monotonic()
    srv = start([wanemu, "exec", server_fe, "--", os.path.join(bindir, "impi-server"),
                 "-server", str(len(clusters))], env, out, "[impi-server out] ")
    procs.append(("impi-server", srv))
    addr = None
    while time.monotonic() - t0 < 20 and srv.poll() is None:
        for line in out:
            m = re.search(r"(\d+\.\d+\.\d+\.\d+:\d+)", line)
            if m:
                addr = m.group(1)
                break
        if addr:
            break
        time.sleep(0.02)
    if not addr:
        log("FAIL: impi-server printed no ADDR:PORT")
        kill_group(srv)
        return None, 0.0, out
    log(f"impi-server on {server_fe} at {addr} (no impi-relay)")
    t0 = time.monotonic()
    for i, c in enumerate(clusters):
        hs = [h for _, h in hosts[c]]
        cmd = [wanemu, "exec", hs[0], "--", os.path.join(bindir, "mpirun"), "--timeout", "40",
               "-client", str(i), addr, "-n", "2", "--host", ",".join(hs),
               "--launcher-exec", f"{wanemu} exec", "--", program]
        log(f"client {i}: " + " ".join(cmd))
        procs.append((f"client {i}", start(cmd, env, out, f"[c{i}] ")))
    rc = None
    deadline = t0 + 60
    while time.monotonic() < deadline and any(p.poll() is None for _, p in procs):
        time.sleep(0.02)
    elapsed = time.monotonic() - t0
    for what, p in procs:
        if p.poll() is None:
            log(f"{what} still running after {elapsed:.1f} s: killing it")
            kill_group(p)
        else:
            out.append(f"[unreachable_test] {what} exited with status {p.returncode}")
        p.pump.join(5)
    codes = [p.returncode for _, p in procs[1:]]
    rc = next((c for c in codes if c), 0)
    return rc, elapsed, out


def check_job(order, rc, elapsed, out):
    text = "\n".join(out)
    print(text, flush=True)
    why = None
    host_re = (r"cannot reach host \d+ \(client \d+\) at 10\.\d+\.\d+\.\d+:\d+: "
               r"(Network|No route to host|Host) ")
    if rc is None:
        why = "the job did not end within 60 s"
    elif rc == 0:
        why = "the job succeeded although one cluster's hosts cannot be reached"
    elif rc in (124, 125):
        why = f"exit status {rc} (timeout or set-up failure), expected the job to fail by itself"
    elif elapsed > LIMIT:
        why = f"the job took {elapsed:.1f} s to end, expected under {LIMIT:g} s"
    elif "left running" in text:
        why = "processes of the job were left running"
    elif not re.search(host_re, text):
        why = f"no message naming the unreachable host and its address ({host_re!r})"
    elif "impi-relay" not in text:
        why = "the message does not point to impi-relay"
    if why:
        log(f"FAIL ({order}): {why}")
        return False
    log(f"job over {order}: failed as expected (exit {rc}) in {elapsed:.2f} s")
    return True


def main(argv):
    if len(argv) != 5:
        print(__doc__)
        return 2
    wanemu, sites, bindir, run, program = argv
    if os.geteuid() != 0:
        print("unreachable_test: needs root (wanemu); skipped")
        return 77
    env = dict(os.environ, WANEMU_RUN=run)
    for v in ("WANMPI_IMPI_CONNECT_TIMEOUT", "WANMPI_IMPI_STARTUP_TIMEOUT"):
        env.pop(v, None)
    ok = True
    if run_netns(run):
        log(f"taking down the run {run} left by an earlier session")
        subprocess.run([wanemu, "down", "--name", run], timeout=90)
    try:
        r = subprocess.run([wanemu, "up", "--name", run, "--watch-pid", str(os.getpid()),
                            "--clusters", "2", "--hosts", "2", "--private", "1", "--delay", "2ms",
                            "--quiet"], timeout=120)
        if r.returncode != 0:
            log(f"FAIL: wanemu up failed ({r.returncode})")
            return 1
        mode = sites_mode(sites)
        log(f"mode: {mode}")
        for order in ("c0,c1", "c1,c0"):
            if mode == "direct":
                rc, elapsed, out = job_direct(wanemu, bindir, run, order, program, env)
            else:
                rc, elapsed, out = job_with_sites(sites, bindir, run, order, program, mode, env)
            ok = check_job(order, rc, elapsed, out) and ok
            left = netns_procs(run)
            if left:
                log("FAIL: processes left in the run's namespaces: " +
                    "; ".join(f"{ns}: pid {pid} {cmd}" for ns, pid, cmd in left))
                ok = False
                for _, pid, _ in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
    finally:
        r = subprocess.run([wanemu, "down", "--name", run], timeout=120)
        if r.returncode != 0:
            log(f"FAIL: wanemu down failed ({r.returncode})")
            ok = False
        left = run_netns(run)
        if left:
            log("FAIL: namespaces left after wanemu down: " + " ".join(left))
            ok = False
    log("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
