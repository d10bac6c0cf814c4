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
row's congestion control) and traffic (every row moved bytes).

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
        subprocess.run([wanemu, "down", "--all"], timeout=90)
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
    for c in checks.split(","):
        key, _, val = c.partition("=")
        if key == "rows" and len(rows) != int(val):
            return f"{len(rows)} statistics rows, expected {val}"
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
    expect, regex, stats = "pass", None, None
    while rest and rest[0] != "--":
        if rest[0] == "--expect":
            expect = rest[1]
        elif rest[0] == "--regex":
            regex = rest[1]
        elif rest[0] == "--stats":
            stats = rest[1]
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
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = p.stdout.decode(errors="replace")
    sys.stdout.write(out)
    rc = p.returncode
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
