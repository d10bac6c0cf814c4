/* task_farm.c: a latency-tolerant master/worker task farm, written the way the LAM-SCTP paper
 * (Kamal, Penoff, Wagner, "SCTP versus TCP for MPI", SC'05) recommends for programs that run
 * across a wide-area network. Standard MPI only: it builds with wanmpi's mpicc and with Debian's
 * mpicc.openmpi / mpicc.mpich.
 *
 * Rank 0 is the master, every other rank a worker. The master keeps K tasks in flight per
 * worker, so a worker never waits a whole round trip for its next task as long as
 * (K - 1) x task time >= round trip (docs/user-guide.md, "Latency-tolerant programs"):
 *
 *   - every worker has K slots; slot j's tasks and results travel with tag TAG_SLOT0 + j (the
 *     paper's "tags as task streams": independent slots never share a tag, so an MPI that maps
 *     tags to streams or lanes lets a lost packet of one slot delay that slot only);
 *   - the master posts one receive per slot ahead of time, sends with MPI_Isend and waits with
 *     MPI_Waitsome on all slots of all workers; a completed slot is refilled at once;
 *   - a worker posts its K receives ahead too and re-posts a slot's receive before it sends that
 *     slot's result, so the next task never arrives unexpected; it serves its slots in the order
 *     MPI_Waitany hands them out;
 *   - a task message is a 16-byte header (task id, flags) and IN bytes of input generated from the
 *     task id; a result is a 16-byte header (task id, checksum of the input) and OUT bytes filled
 *     from the checksum. The master checks every result against the checksum it expects and keeps
 *     one bit per task: a result for a task that was not out, a task answered twice, a wrong
 *     checksum or a missing task fails the run (exit 1, no " No Errors").
 *
 * Options (all optional):
 *   -k K        tasks in flight per worker (default 4)
 *   -n N        number of tasks (default 200); or
 *   -T SECONDS  run time: issue tasks until SECONDS have passed, then drain (overrides -n)
 *   -t USEC     task duration in microseconds (default 1000)
 *   -w spin|sleep  how a task spends its duration: spin = busy compute until the duration has
 *               passed on the clock (default; the wall time is exact even when the CPU is shared),
 *               sleep = nanosleep (to emulate more workers than the machine has cores)
 *   -s BYTES    input bytes per task (the task size), after the header (default 1024)
 *   -r BYTES    result bytes per task, after the header (default 64)
 *   -p PINGS    round trips measured to each worker before the run (default 9; 0: none)
 *   -q          print the summary only (no per-worker lines)
 *   -F dup|corrupt  fault injection for the tests (tests/mp): worker 1 answers its third task
 *               with its first task's result (a duplicate; the third task is then lost), or
 *               with a wrong checksum; the master must report it and the run must fail. (A
 *               result that never comes leaves the master waiting: the launcher's timeout
 *               ends that run, as it would any MPI program that waits for a lost message.)
 *
 * Output (rank 0): "key value" lines for scripts (tools/wanmpi-model reads them):
 *   farm_workers W / farm_k K / farm_tasks N / farm_task_us T / farm_in_bytes / farm_out_bytes
 *   farm_work spin|sleep / farm_rtt_us and farm_rtt_min_us <median and least round trip of a
 *   header-sized message, per worker, comma-separated> / farm_worker_tasks <tasks per worker> /
 *   farm_elapsed_s (first task sent to last result in) / farm_tasks_per_s / farm_task_measured_us
 *   (the mean time a task really took on the workers: a sleep or a preempted spin overruns on
 *   a loaded machine), then " No Errors" when every result checked out.
 */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_PING = 1, TAG_SLOT0 = 100 };
enum { HDR = 16 };            /* header: uint64 task id, uint64 flags (task) or checksum (result) */
enum { FLAG_STOP = 1 };       /* a task message with this flag ends its slot */
#define MAX_K 1024

enum { FAULT_NONE, FAULT_DUP, FAULT_CORRUPT };

struct options {
    int k, quiet, pings, sleep_work, fault;
    long ntasks, task_us, in_bytes, out_bytes;
    double run_s;
};

static void usage_exit(int rank, const char *why) {
    if (rank == 0)
        fprintf(stderr,
                "task_farm: %s\nusage: task_farm [-k K] [-n N | -T SECONDS] [-t USEC] "
                "[-w spin|sleep] [-s BYTES] [-r BYTES] [-p PINGS] [-q] [-F dup|corrupt]\n",
                why);
    MPI_Finalize();
    exit(2);
}

static long parse_long(const char *s, long lo, long hi, int rank, const char *what) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        char msg[128];
        snprintf(msg, sizeof msg, "bad %s '%s' (%ld..%ld)", what, s, lo, hi);
        usage_exit(rank, msg);
    }
    return v;
}

static struct options parse(int argc, char **argv, int rank) {
    struct options o = {4, 0, 9, 0, FAULT_NONE, 200, 1000, 1024, 64, 0.0};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "-q") == 0) {
            o.quiet = 1;
            continue;
        }
        if (a[0] != '-' || a[1] == '\0' || a[2] != '\0' || i + 1 >= argc)
            usage_exit(rank, "unknown option or missing value");
        const char *v = argv[++i];
        switch (a[1]) {
        case 'k': o.k = (int)parse_long(v, 1, MAX_K, rank, "k"); break;
        case 'n': o.ntasks = parse_long(v, 1, 1L << 40, rank, "task count"); break;
        case 'T': o.run_s = (double)parse_long(v, 1, 86400, rank, "run time (s)"); break;
        case 't': o.task_us = parse_long(v, 0, 60L * 1000 * 1000, rank, "task time (us)"); break;
        case 's': o.in_bytes = parse_long(v, 0, 1L << 30, rank, "input bytes"); break;
        case 'r': o.out_bytes = parse_long(v, 0, 1L << 30, rank, "result bytes"); break;
        case 'p': o.pings = (int)parse_long(v, 0, 1000, rank, "ping count"); break;
        case 'w':
            if (strcmp(v, "spin") == 0) o.sleep_work = 0;
            else if (strcmp(v, "sleep") == 0) o.sleep_work = 1;
            else usage_exit(rank, "-w takes spin or sleep");
            break;
        case 'F':
            if (strcmp(v, "dup") == 0) o.fault = FAULT_DUP;
            else if (strcmp(v, "corrupt") == 0) o.fault = FAULT_CORRUPT;
            else usage_exit(rank, "-F takes dup or corrupt");
            break;
        default: usage_exit(rank, "unknown option");
        }
    }
    return o;
}

static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* splitmix64: the input bytes of task `id` are a pure function of id, so the master knows every
 * task's checksum without keeping its input. */
static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
static void fill_input(unsigned char *p, long n, uint64_t id) {
    uint64_t s = mix(id);
    for (long i = 0; i < n; ++i) {
        if (i % 8 == 0) s = mix(s);
        p[i] = (unsigned char)(s >> (8 * (i % 8)));
    }
}
/* FNV-1a over the input, seeded with the task id: what a worker computes and the master expects. */
static uint64_t checksum(const unsigned char *p, long n, uint64_t id) {
    uint64_t h = 0xcbf29ce484222325ULL ^ mix(id);
    for (long i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}
/* Byte i of a result's body: a function of the checksum, so the whole body is checked too. */
static unsigned char result_byte(uint64_t sum, long i) {
    return (unsigned char)(sum >> (8 * (i % 8))) ^ (unsigned char)i;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One task's compute time. spin: busy work until the duration has passed on the monotonic clock
 * (not a calibrated loop count: on a shared 2-core machine a fixed count would take longer
 * whenever another process runs, and the model's task time would be wrong). */
static void work(const struct options *o) {
    if (o->task_us == 0) return;
    if (o->sleep_work) {
        struct timespec ts = {o->task_us / 1000000, (o->task_us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0) {}
        return;
    }
    double end = now_s() + o->task_us * 1e-6;
    volatile uint64_t x = 1;
    while (now_s() < end)
        for (int i = 0; i < 256; ++i) x = mix(x);
}

/* Seconds spent in work() by this worker, for farm_task_measured_us. */
static double work_seconds;
static long tasks_served;

static int worker(const struct options *o, int rank) {
    int k = o->k;
    long in_len = HDR + o->in_bytes, out_len = HDR + o->out_bytes;
    unsigned char *in = malloc((size_t)k * in_len), *out = malloc((size_t)k * out_len);
    MPI_Request *rreq = malloc(sizeof(MPI_Request) * k), *sreq = malloc(sizeof(MPI_Request) * k);
    if (!in || !out || !rreq || !sreq) {
        fprintf(stderr, "task_farm: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Ping-pongs first: the master times them (header-sized, so the RTT the model gets). */
    unsigned char ping[HDR];
    for (int p = 0; p < o->pings; ++p) {
        MPI_Recv(ping, HDR, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(ping, HDR, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD);
    }
    for (int j = 0; j < k; ++j) {
        MPI_Irecv(in + j * in_len, (int)in_len, MPI_BYTE, 0, TAG_SLOT0 + j, MPI_COMM_WORLD,
                  &rreq[j]);
        sreq[j] = MPI_REQUEST_NULL;
    }
    int open = k;
    uint64_t first_id = 0, first_sum = 0;
    while (open > 0) {
        int j;
        MPI_Status st;
        MPI_Waitany(k, rreq, &j, &st);
        unsigned char *t = in + j * in_len;
        int got;
        MPI_Get_count(&st, MPI_BYTE, &got);
        uint64_t id = get64(t), flags = get64(t + 8);
        if (flags & FLAG_STOP) {
            --open;  /* rreq[j] is now MPI_REQUEST_NULL: Waitany skips it */
            continue;
        }
        if (got != in_len) {
            fprintf(stderr, "task_farm: rank %d: task %llu has %d bytes, expected %ld\n", rank,
                    (unsigned long long)id, got, in_len);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        uint64_t sum = checksum(t + HDR, o->in_bytes, id);
        ++tasks_served;
        double w0 = now_s();
        work(o);
        work_seconds += now_s() - w0;
        /* The slot's previous result must have left before its buffer is reused; then post the
         * slot's next receive BEFORE sending this result: the master refills the slot as soon as
         * the result arrives, and that task must find a receive waiting. */
        MPI_Wait(&sreq[j], MPI_STATUS_IGNORE);
        unsigned char *r = out + j * out_len;
        if (tasks_served == 1) {
            first_id = id;
            first_sum = sum;
        } else if (tasks_served == 3 && rank == 1 && o->fault == FAULT_DUP) {
            id = first_id;
            sum = first_sum;
        }
        put64(r, id);
        put64(r + 8, sum);
        for (long i = 0; i < o->out_bytes; ++i) r[HDR + i] = result_byte(sum, i);
        if (tasks_served == 3 && rank == 1 && o->fault == FAULT_CORRUPT) put64(r + 8, sum ^ 1);
        MPI_Irecv(t, (int)in_len, MPI_BYTE, 0, TAG_SLOT0 + j, MPI_COMM_WORLD, &rreq[j]);
        MPI_Isend(r, (int)out_len, MPI_BYTE, 0, TAG_SLOT0 + j, MPI_COMM_WORLD, &sreq[j]);
    }
    MPI_Waitall(k, sreq, MPI_STATUSES_IGNORE);
    free(in);
    free(out);
    free(rreq);
    free(sreq);
    return 0;
}

/* The master's state: one slot per (worker, j), slot s = (worker - 1) * k + j. */
struct farm {
    const struct options *o;
    int k, nslots;
    long in_len, out_len;
    unsigned char *in, *out;   /* per slot: the task being sent, the result being received */
    MPI_Request *rreq, *sreq;
    uint64_t *task, *expect;   /* per slot: the task out in it and the checksum it must return */
    unsigned char *done;       /* one byte per issued task: answered (and checked) */
    size_t cap;
    uint64_t next;             /* tasks issued so far */
    int active;                /* slots with a task out */
    double t0;
};

static int slot_worker(const struct farm *f, int s) { return s / f->k + 1; }
static int slot_tag(const struct farm *f, int s) { return TAG_SLOT0 + s % f->k; }

/* Puts the next task into slot s (its receive for the result posted first), or, when the run is
 * over (-n tasks issued, or -T seconds passed), a stop message that closes the slot. */
static void refill(struct farm *f, int s) {
    const struct options *o = f->o;
    unsigned char *t = f->in + (size_t)s * f->in_len;
    int more = o->run_s > 0 ? (MPI_Wtime() - f->t0 < o->run_s) : (f->next < (uint64_t)o->ntasks);
    if (!more) {
        put64(t, 0);
        put64(t + 8, FLAG_STOP);
        MPI_Isend(t, HDR, MPI_BYTE, slot_worker(f, s), slot_tag(f, s), MPI_COMM_WORLD, &f->sreq[s]);
        return;
    }
    if (f->next >= f->cap) {  /* -T: the task count is not known in advance */
        size_t ncap = f->cap * 2;
        unsigned char *nd = realloc(f->done, ncap);
        if (!nd) {
            fprintf(stderr, "task_farm: master: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(nd + f->cap, 0, ncap - f->cap);
        f->done = nd;
        f->cap = ncap;
    }
    uint64_t id = f->next++;
    put64(t, id);
    put64(t + 8, 0);
    fill_input(t + HDR, o->in_bytes, id);
    f->task[s] = id;
    f->expect[s] = checksum(t + HDR, o->in_bytes, id);
    ++f->active;
    MPI_Irecv(f->out + (size_t)s * f->out_len, (int)f->out_len, MPI_BYTE, slot_worker(f, s),
              slot_tag(f, s), MPI_COMM_WORLD, &f->rreq[s]);
    MPI_Isend(t, (int)f->in_len, MPI_BYTE, slot_worker(f, s), slot_tag(f, s), MPI_COMM_WORLD,
              &f->sreq[s]);
}

/* Checks slot s's result (status st); returns 1 if it is right. */
static int check(struct farm *f, int s, const MPI_Status *st) {
    const unsigned char *r = f->out + (size_t)s * f->out_len;
    int got;
    MPI_Get_count(st, MPI_BYTE, &got);
    uint64_t id = get64(r), sum = get64(r + 8);
    int twice = id < f->next && f->done[id];
    int bad = got != f->out_len || id != f->task[s] || sum != f->expect[s] || twice;
    for (long b = 0; !bad && b < f->o->out_bytes; ++b) bad = r[HDR + b] != result_byte(sum, b);
    if (bad) {
        fprintf(stderr,
                "task_farm: bad result from rank %d slot %d: task %llu (expected %llu), %d bytes "
                "(expected %ld), checksum %016llx (expected %016llx)%s\n",
                slot_worker(f, s), s % f->k, (unsigned long long)id, (unsigned long long)f->task[s],
                got, f->out_len, (unsigned long long)sum, (unsigned long long)f->expect[s],
                twice ? ", answered twice" : "");
        return 0;
    }
    f->done[id] = 1;
    return 1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "task_farm: master: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static int master(const struct options *o, int nworkers) {
    struct farm f = {0};
    f.o = o;
    f.k = o->k;
    f.nslots = nworkers * o->k;
    f.in_len = HDR + o->in_bytes;
    f.out_len = HDR + o->out_bytes;
    f.in = xcalloc((size_t)f.nslots, f.in_len);
    f.out = xcalloc((size_t)f.nslots, f.out_len);
    f.rreq = xcalloc((size_t)f.nslots, sizeof(MPI_Request));
    f.sreq = xcalloc((size_t)f.nslots, sizeof(MPI_Request));
    f.task = xcalloc((size_t)f.nslots, sizeof(uint64_t));
    f.expect = xcalloc((size_t)f.nslots, sizeof(uint64_t));
    f.cap = o->run_s > 0 ? 4096 : (size_t)o->ntasks;
    f.done = xcalloc(f.cap, 1);
    int *idx = xcalloc((size_t)f.nslots, sizeof(int));
    MPI_Status *sts = xcalloc((size_t)f.nslots, sizeof(MPI_Status));
    long *per_worker = xcalloc((size_t)nworkers, sizeof(long));
    double *rtt = xcalloc((size_t)nworkers, sizeof(double));
    double *rtt_min = xcalloc((size_t)nworkers, sizeof(double));
    double *ping_s = xcalloc((size_t)o->pings + 1, sizeof(double));
    int errors = 0;

    unsigned char ping[HDR] = {0};
    for (int w = 0; w < nworkers; ++w) {
        for (int p = 0; p < o->pings; ++p) {
            double t = MPI_Wtime();
            MPI_Send(ping, HDR, MPI_BYTE, w + 1, TAG_PING, MPI_COMM_WORLD);
            MPI_Recv(ping, HDR, MPI_BYTE, w + 1, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ping_s[p] = MPI_Wtime() - t;
        }
        /* The median is what a task's round trip costs on a shared machine; the least, what
         * the network alone costs. */
        qsort(ping_s, (size_t)o->pings, sizeof(double), cmp_double);
        rtt[w] = o->pings ? ping_s[o->pings / 2] : 0;
        rtt_min[w] = o->pings ? ping_s[0] : 0;
    }

    for (int s = 0; s < f.nslots; ++s) f.rreq[s] = f.sreq[s] = MPI_REQUEST_NULL;
    f.t0 = MPI_Wtime();
    /* Slot 0 of every worker first, then slot 1, ...: every worker starts after one message. */
    for (int i = 0; i < f.nslots; ++i) refill(&f, (i % nworkers) * f.k + i / nworkers);
    uint64_t completed = 0;
    while (f.active > 0) {
        int n;
        MPI_Waitsome(f.nslots, f.rreq, &n, idx, sts);
        for (int i = 0; i < n; ++i) {
            int s = idx[i];
            if (check(&f, s, &sts[i])) {
                ++completed;
                ++per_worker[s / f.k];
            } else {
                ++errors;
            }
            --f.active;
            /* The result answers the task, so the task's send is complete (or completes now)
             * and its buffer may be refilled. */
            MPI_Wait(&f.sreq[s], MPI_STATUS_IGNORE);
            refill(&f, s);
        }
    }
    double elapsed = MPI_Wtime() - f.t0;
    MPI_Waitall(f.nslots, f.sreq, MPI_STATUSES_IGNORE);  /* the stop messages */
    for (uint64_t id = 0; id < f.next; ++id)
        if (!f.done[id]) {
            fprintf(stderr, "task_farm: task %llu never answered\n", (unsigned long long)id);
            ++errors;
        }

    printf("farm_workers %d\nfarm_k %d\nfarm_tasks %llu\nfarm_task_us %ld\nfarm_in_bytes %ld\n"
           "farm_out_bytes %ld\nfarm_work %s\n",
           nworkers, f.k, (unsigned long long)completed, o->task_us, o->in_bytes, o->out_bytes,
           o->sleep_work ? "sleep" : "spin");
    if (o->pings > 0) {
        printf("farm_rtt_us ");
        for (int w = 0; w < nworkers; ++w) printf("%s%.0f", w ? "," : "", rtt[w] * 1e6);
        printf("\nfarm_rtt_min_us ");
        for (int w = 0; w < nworkers; ++w) printf("%s%.0f", w ? "," : "", rtt_min[w] * 1e6);
        printf("\n");
    }
    printf("farm_worker_tasks ");
    for (int w = 0; w < nworkers; ++w) printf("%s%ld", w ? "," : "", per_worker[w]);
    printf("\nfarm_elapsed_s %.6f\nfarm_tasks_per_s %.2f\n", elapsed,
           elapsed > 0 ? completed / elapsed : 0.0);
    if (!o->quiet)
        for (int w = 0; w < nworkers; ++w)
            printf("  worker %d: %ld tasks, %.1f per second, round trip %.0f us\n", w + 1,
                   per_worker[w], per_worker[w] / elapsed, rtt[w] * 1e6);
    fflush(stdout);
    free(f.in);
    free(f.out);
    free(f.rreq);
    free(f.sreq);
    free(f.task);
    free(f.expect);
    free(f.done);
    free(idx);
    free(sts);
    free(per_worker);
    free(rtt);
    free(rtt_min);
    free(ping_s);
    return errors;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct options o = parse(argc, argv, rank);
    if (size < 2) usage_exit(rank, "needs at least 2 ranks (a master and a worker)");
    if (o.in_bytes + HDR > 0x7fffffffL || o.out_bytes + HDR > 0x7fffffffL)
        usage_exit(rank, "message too large for an int count");
    MPI_Barrier(MPI_COMM_WORLD);
    int errors = rank == 0 ? master(&o, size - 1) : worker(&o, rank);
    /* Every rank learns the verdict, so a failed check fails the job's exit status everywhere. */
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* The compute time the tasks really took: {seconds in work(), tasks} summed over workers. */
    double mine[2] = {work_seconds, 0}, sum[2] = {0, 0};
    if (rank != 0) mine[1] = (double)tasks_served;
    MPI_Reduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (sum[1] > 0) printf("farm_task_measured_us %.1f\n", sum[0] / sum[1] * 1e6);
        if (all == 0) printf(" No Errors\n");
        else printf("task_farm: %d error(s)\n", all);
        fflush(stdout);
    }
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
