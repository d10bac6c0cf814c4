#!/usr/bin/env python3
"""wanmpi-model farm: the formulas against runs worked out by hand (event by event, in the
comments), reading examples/task_farm.c's output (also behind mpirun's --tag-output prefixes),
and usage errors. Usage: model_test.py PATH/TO/wanmpi-model"""
import subprocess
import sys

MODEL = sys.argv[1]
failures = 0


def run(args, stdin=None):
    p = subprocess.run([sys.executable, MODEL] + args, input=stdin, capture_output=True,
                       text=True, timeout=30)
    kv = {}
    for line in p.stdout.splitlines():
        w = line.split()
        if len(w) == 2 and w[0].endswith(("_s", "_per_s", "_model")):
            kv[w[0]] = float(w[1])
    return p.returncode, kv, p.stdout + p.stderr


def check(what, cond, out=""):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}\n{out}")
    else:
        print(f"ok: {what}")


def expect(what, args, key, value, stdin=None):
    rc, kv, out = run(args, stdin)
    got = kv.get(key)
    check(f"{what}: {key} = {value}", rc == 0 and got is not None and abs(got - value) < 1e-6,
          f"rc {rc}, got {got}\n{out}")


# Latency-bound, one worker: R 20 ms, T 2 ms, K 4, 8 tasks. Tasks reach the worker at 10 ms, are
# done at 12..18, results back at 22..28; refills arrive at 32..38, done 34..40, back 44..50.
expect("latency-bound worker", ["farm", "--rtt", "20ms", "--task", "2ms", "-k", "4",
                                "--tasks", "8"], "model_s", 0.050)
# Compute-bound: T 10 ms, K 4. Done at 20, 30, 40, 50; the first refill is back at the worker at
# 40 (result 30 + 10), before the worker is free: it never idles, 8 tasks end at 90, back at 100.
expect("compute-bound worker", ["farm", "--rtt", "20ms", "--task", "10ms", "-k", "4",
                                "--tasks", "8"], "model_s", 0.100)
# K = 1: every task costs a full round trip plus its time: 3 x 22 ms.
expect("one task in flight", ["farm", "--rtt", "20ms", "--task", "2ms", "-k", "1",
                              "--tasks", "3"], "model_s", 0.066)
# A partial last round: 6 tasks with K 4 (rounds of 4 and 2): 22 + 22 + 20 + 2 x 2 = 50 - 4.
expect("partial round", ["farm", "--rtt", "20ms", "--task", "2ms", "-k", "4", "--tasks", "6"],
       "model_s", 0.046)
# Two workers fed dynamically, K 1, T 10 ms: the local one (R 0) finishes at 10, 20, 30, 40,
# the remote one (R 20 ms) at 30, 60: the 4th result overall is at 30 ms.
expect("dynamic sharing", ["farm", "--rtt", "0,20ms", "--task", "10ms", "-k", "1",
                           "--tasks", "4"], "model_s", 0.030)
# The paper's formula with k = the worker's 4 tasks: 20 + 4 x 2 + 3 x 18 ms.
expect("paper's formula", ["farm", "--rtt", "20ms", "--task", "2ms", "-k", "4", "--tasks", "4"],
       "paper_s", 0.082)
# Serialization: 16 + 984 + 16 + 984 = 2000 bytes at 1 Mbit/s = 16 ms more per round trip.
expect("rate", ["farm", "--rtt", "20ms", "--task", "2ms", "-k", "1", "--tasks", "1", "--rate",
                "1mbit", "--in", "984", "--out", "984"], "model_s", 0.038)
# Link-bound: 100 tasks x 2000 bytes at 1 Mbit/s = 1.6 s, whatever the latency.
expect("link-bound", ["farm", "--rtt", "0", "--task", "0", "-k", "8", "--workers", "4",
                      "--tasks", "100", "--rate", "1mbit", "--in", "984", "--out", "984"],
       "model_s", 1.6)

# The farm's own output, as wanmpi-sites --tag-output prints it: round trips per worker taken
# from it, the measured time compared (3 workers, 2 of them 20 ms away; K 4, 2 ms tasks).
farm_out = """[c0:0] farm_workers 3
[c0:0] farm_k 4
[c0:0] farm_tasks 24
[c0:0] farm_task_us 2000
[c0:0] farm_in_bytes 0
[c0:0] farm_out_bytes 0
[c0:0] farm_work spin
[c0:0] farm_rtt_us 0,20000,20000
[c0:0] farm_worker_tasks 14,5,5
[c0:0] farm_elapsed_s 0.055000
[c0:0] farm_tasks_per_s 436.36
[c0:0]  No Errors
"""
rc, kv, out = run(["farm", "-"], farm_out)
# Local worker: T_w(n) = 2n ms. Remote: 20 + 2n + (ceil(n/4) - 1) x 14 ms: 22, 24, 26, 28 (n 1-4),
# 44, 46, 48, 50 (n 5-8). Sorted completions: 2, 4, ..., 50: 24 results at t where
# t/2 + 2 x remote(t) >= 24: at t = 28 ms: 14 + 2 x 4 = 22; at t = 30: 15 + 8 = 23; t = 32: 16 + 8.
check("farm output: model 32 ms", rc == 0 and abs(kv.get("model_s", 0) - 0.032) < 1e-6, out)
check("farm output: measured 55 ms", abs(kv.get("measured_s", 0) - 0.055) < 1e-9, out)
check("farm output: ratio", abs(kv.get("measured_over_model", 0) - 0.055 / 0.032) < 1e-3, out)
# --rtt overrides the farm's measured round trips (one value for every worker).
rc, kv, out = run(["farm", "-", "--rtt", "0"], farm_out)
check("--rtt overrides: 24 tasks / 3 workers x 2 ms = 16 ms",
      rc == 0 and abs(kv.get("model_s", 0) - 0.016) < 1e-6, out)

# The task time the workers measured (3 ms, a loaded machine) replaces the 2 ms asked for. Local:
# 3n ms; remote: 20 + 3n + (ceil(n/4) - 1) x 11: 23..32 (n 1-4), 46 (n 5). At 45.9 ms the workers
# have 15 + 4 + 4 = 23 results, at 46 ms 15 + 5 + 5 = 25: the 24th is at 46 ms.
rc, kv, out = run(["farm", "-"], farm_out.replace("[c0:0]  No Errors",
                                                  "[c0:0] farm_task_measured_us 3000.0"))
check("measured task time: 46 ms", rc == 0 and abs(kv.get("model_s", 0) - 0.046) < 1e-6, out)
check("measured task time is said", "asked for 2.00 ms" in out, out)

# --run: the command's output is compared; a failing command is an error (exit 1).
rc, kv, out = run(["farm", "--run", "--", "sh", "-c", "printf '%s' \"$0\"", farm_out])
check("--run reads the command's output", rc == 0 and "measured_s" in kv, out)
rc, kv, out = run(["farm", "--run", "--", "sh", "-c", "echo farm_workers 1; exit 3"])
check("--run: the farm failed -> exit 1", rc == 1 and "failed (exit 3)" in out, out)
rc, kv, out = run(["farm", "-"], "hello\n")
check("no summary -> exit 1", rc == 1 and "no task_farm summary" in out, out)

# Usage errors: exit 2 and say what is wrong.
for args, msg in ((["farm", "--task", "2ms", "-k", "4", "--tasks", "8"], "need --rtt"),
                  (["farm", "--rtt", "20xs", "--task", "2ms", "-k", "4", "--tasks", "8"],
                   "bad time '20xs'"),
                  (["farm", "--rtt", "1ms,2ms", "--workers", "3", "--task", "2ms", "-k", "1",
                    "--tasks", "8"], "2 round trips for 3 workers"),
                  (["farm", "--rtt", "1ms", "--task", "2ms", "-k", "0", "--tasks", "8"],
                   "k must be >= 1"),
                  (["farm", "--rtt", "1ms", "--task", "2ms", "-k", "1", "--tasks", "8",
                    "--rate", "fast"], "bad rate 'fast'"),
                  (["farm", "--run"], "--run needs a command")):
    rc, kv, out = run(args)
    check(f"usage: {' '.join(args)} -> {msg}", rc == 2 and msg in out, out)

print("wanmpi-model farm: " + ("No Errors" if failures == 0 else f"{failures} failure(s)"))
sys.exit(1 if failures else 0)
