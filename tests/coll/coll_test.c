/* coll_test: every collective, blocking and nonblocking, checked against values computed serially.
 *
 * Covers: Barrier, Bcast, Gather(v), Scatter(v), Allgather(v), Alltoall(v,w), Reduce, Allreduce,
 * Reduce_scatter(_block), Scan, Exscan and their I-variants (completed with MPI_Wait, or with an
 * MPI_Test loop so progress inside MPI_Test is exercised too); every root for small messages;
 * MPI_IN_PLACE wherever the standard allows it; sizes on both sides of the algorithm switch
 * points (docs/collectives.md); a non-contiguous datatype (MPI_INT resized to an 8-byte extent,
 * so every other int is a hole that must stay untouched); varying counts and displacements with
 * zeros; a non-commutative user op (2x2 matrix product) whose result depends on rank order; a
 * split communicator with reversed rank order; several nonblocking collectives outstanding at
 * once, completed in reverse order.
 *
 * ctest runs it with the automatic algorithm choice and with every algorithm forced through the
 * WANMPI_COLL_* tunables (tests/coll/CMakeLists.txt). Standard MPI only: runs under MPICH and
 * Open MPI unchanged. Arguments: -q (quick: fewer sizes).
 */
#include "../mp/mptest.h"

static int quick = 0;
static MPI_Datatype strided; /* MPI_INT with an extent of 2 ints */
static MPI_Datatype mat_t;   /* 4 unsigned: a 2x2 matrix */
static MPI_Op matmul_op;
static int me, np;           /* rank and size in the communicator under test */
static const char *cname;

#define CHECKV(cond, ...) MT_CHECK(cond, __VA_ARGS__)

/* Value rank r contributes at index i. */
static int val(int r, int i) { return r * 1000 + (i % 9973) * 7 + 3; }

/* mode 0: blocking; 1: nonblocking + MPI_Wait; 2: nonblocking + MPI_Test loop */
static void finish(int mode, MPI_Request *req)
{
    if (mode == 1) {
        MPI_Wait(req, MPI_STATUS_IGNORE);
    } else if (mode == 2) {
        int flag = 0;
        while (!flag) MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    }
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        printf("out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* ---- barrier / bcast ---- */
static void t_barrier(MPI_Comm comm, int mode)
{
    MPI_Request r;
    if (mode) {
        MPI_Ibarrier(comm, &r);
        finish(mode, &r);
    } else {
        MPI_Barrier(comm);
    }
}

static void t_bcast(MPI_Comm comm, int mode, int count, int root, int use_strided)
{
    int i, *buf = xmalloc(sizeof(int) * (size_t)count * 2);
    MPI_Request r;
    MPI_Datatype t = use_strided ? strided : MPI_INT;
    int stride = use_strided ? 2 : 1;
    for (i = 0; i < count * stride; ++i) buf[i] = -1;
    if (me == root)
        for (i = 0; i < count; ++i) buf[i * stride] = val(root, i);
    if (mode) {
        MPI_Ibcast(buf, count, t, root, comm, &r);
        finish(mode, &r);
    } else {
        MPI_Bcast(buf, count, t, root, comm);
    }
    for (i = 0; i < count; ++i) {
        if (buf[i * stride] != val(root, i)) {
            CHECKV(0, "%s bcast(count %d root %d strided %d mode %d): [%d] = %d, want %d", cname,
                   count, root, use_strided, mode, i, buf[i * stride], val(root, i));
            break;
        }
        if (stride == 2 && buf[i * 2 + 1] != -1) {
            CHECKV(0, "%s bcast strided: hole %d overwritten", cname, i);
            break;
        }
    }
    free(buf);
}

/* ---- gather / scatter ---- */
static void t_gather(MPI_Comm comm, int mode, int k, int root, int in_place, int use_strided)
{
    int i, r, *sb = xmalloc(sizeof(int) * (size_t)k), *rb = NULL;
    int stride = use_strided ? 2 : 1;
    MPI_Datatype rt = use_strided ? strided : MPI_INT;
    MPI_Request req;
    for (i = 0; i < k; ++i) sb[i] = val(me, i);
    if (me == root) {
        rb = xmalloc(sizeof(int) * (size_t)k * (size_t)np * 2);
        for (i = 0; i < k * np * stride; ++i) rb[i] = -1;
        if (in_place)
            for (i = 0; i < k; ++i) rb[(me * k + i) * stride] = val(me, i);
    }
    const void *s = (in_place && me == root) ? MPI_IN_PLACE : sb;
    if (mode) {
        MPI_Igather(s, k, MPI_INT, rb, k, rt, root, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Gather(s, k, MPI_INT, rb, k, rt, root, comm);
    }
    if (me == root) {
        int bad = 0;
        for (r = 0; r < np && !bad; ++r)
            for (i = 0; i < k && !bad; ++i)
                if (rb[(r * k + i) * stride] != val(r, i)) {
                    CHECKV(0, "%s gather(k %d root %d inplace %d strided %d mode %d): "
                              "from %d [%d] = %d", cname, k, root, in_place, use_strided, mode, r,
                           i, rb[(r * k + i) * stride]);
                    bad = 1;
                }
        if (stride == 2)
            for (i = 0; i < k * np && !bad; ++i)
                if (rb[i * 2 + 1] != -1) {
                    CHECKV(0, "%s gather strided: hole %d overwritten", cname, i);
                    bad = 1;
                }
    }
    free(sb);
    free(rb);
}

static void t_scatter(MPI_Comm comm, int mode, int k, int root, int in_place, int use_strided)
{
    int i, *sb = NULL, *rb = xmalloc(sizeof(int) * (size_t)k);
    int stride = use_strided ? 2 : 1;
    MPI_Datatype st = use_strided ? strided : MPI_INT;
    MPI_Request req;
    if (me == root) {
        sb = xmalloc(sizeof(int) * (size_t)k * (size_t)np * 2);
        for (i = 0; i < k * np * stride; ++i) sb[i] = -7;
        for (i = 0; i < k * np; ++i) sb[i * stride] = val(i / k, i % k);
    }
    for (i = 0; i < k; ++i) rb[i] = -1;
    void *rbuf = (in_place && me == root) ? MPI_IN_PLACE : rb;
    if (mode) {
        MPI_Iscatter(sb, k, st, rbuf, k, MPI_INT, root, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Scatter(sb, k, st, rbuf, k, MPI_INT, root, comm);
    }
    if (!(in_place && me == root))
        for (i = 0; i < k; ++i)
            if (rb[i] != val(me, i)) {
                CHECKV(0, "%s scatter(k %d root %d inplace %d strided %d mode %d): [%d] = %d",
                       cname, k, root, in_place, use_strided, mode, i, rb[i]);
                break;
            }
    free(sb);
    free(rb);
}

/* Varying counts (some zero) and displacements in reverse rank order with gaps. */
static int vcount(int r, int scale) { return ((r * 3 + 1) % 5) * scale; }
static void vlayout(int scale, int *counts, int *displs, int *total)
{
    int r, off = 0;
    for (r = np - 1; r >= 0; --r) {
        counts[r] = vcount(r, scale);
        displs[r] = off;
        off += counts[r] + 2; /* gap of 2 */
    }
    *total = off;
}

static void t_gatherv(MPI_Comm comm, int mode, int scale, int root, int in_place)
{
    int i, r, total, *counts = xmalloc(sizeof(int) * (size_t)np),
                     *displs = xmalloc(sizeof(int) * (size_t)np);
    vlayout(scale, counts, displs, &total);
    int k = counts[me], *sb = xmalloc(sizeof(int) * (size_t)k), *rb = NULL;
    MPI_Request req;
    for (i = 0; i < k; ++i) sb[i] = val(me, i);
    if (me == root) {
        rb = xmalloc(sizeof(int) * (size_t)total);
        for (i = 0; i < total; ++i) rb[i] = -1;
        if (in_place)
            for (i = 0; i < k; ++i) rb[displs[me] + i] = val(me, i);
    }
    const void *s = (in_place && me == root) ? MPI_IN_PLACE : sb;
    if (mode) {
        MPI_Igatherv(s, k, MPI_INT, rb, counts, displs, MPI_INT, root, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Gatherv(s, k, MPI_INT, rb, counts, displs, MPI_INT, root, comm);
    }
    if (me == root) {
        int bad = 0;
        for (r = 0; r < np && !bad; ++r) {
            for (i = 0; i < counts[r] && !bad; ++i)
                if (rb[displs[r] + i] != val(r, i)) {
                    CHECKV(0, "%s gatherv(scale %d root %d inplace %d mode %d): from %d [%d] = %d",
                           cname, scale, root, in_place, mode, r, i, rb[displs[r] + i]);
                    bad = 1;
                }
            if (!bad && (rb[displs[r] + counts[r]] != -1 || rb[displs[r] + counts[r] + 1] != -1)) {
                CHECKV(0, "%s gatherv: gap after rank %d overwritten", cname, r);
                bad = 1;
            }
        }
    }
    free(sb);
    free(rb);
    free(counts);
    free(displs);
}

static void t_scatterv(MPI_Comm comm, int mode, int scale, int root, int in_place)
{
    int i, r, total, *counts = xmalloc(sizeof(int) * (size_t)np),
                     *displs = xmalloc(sizeof(int) * (size_t)np);
    vlayout(scale, counts, displs, &total);
    int k = counts[me], *sb = NULL, *rb = xmalloc(sizeof(int) * (size_t)k);
    MPI_Request req;
    if (me == root) {
        sb = xmalloc(sizeof(int) * (size_t)total);
        for (r = 0; r < np; ++r)
            for (i = 0; i < counts[r]; ++i) sb[displs[r] + i] = val(r, i);
    }
    for (i = 0; i < k; ++i) rb[i] = -1;
    void *rbuf = (in_place && me == root) ? MPI_IN_PLACE : rb;
    if (mode) {
        MPI_Iscatterv(sb, counts, displs, MPI_INT, rbuf, k, MPI_INT, root, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Scatterv(sb, counts, displs, MPI_INT, rbuf, k, MPI_INT, root, comm);
    }
    if (!(in_place && me == root))
        for (i = 0; i < k; ++i)
            if (rb[i] != val(me, i)) {
                CHECKV(0, "%s scatterv(scale %d root %d mode %d): [%d] = %d", cname, scale, root,
                       mode, i, rb[i]);
                break;
            }
    free(sb);
    free(rb);
    free(counts);
    free(displs);
}

/* ---- allgather(v) ---- */
static void t_allgather(MPI_Comm comm, int mode, int k, int in_place, int use_strided)
{
    int i, r, *sb = xmalloc(sizeof(int) * (size_t)k);
    int stride = use_strided ? 2 : 1;
    int *rb = xmalloc(sizeof(int) * (size_t)k * (size_t)np * 2);
    MPI_Datatype rt = use_strided ? strided : MPI_INT;
    MPI_Request req;
    for (i = 0; i < k; ++i) sb[i] = val(me, i);
    for (i = 0; i < k * np * stride; ++i) rb[i] = -1;
    if (in_place)
        for (i = 0; i < k; ++i) rb[(me * k + i) * stride] = val(me, i);
    const void *s = in_place ? MPI_IN_PLACE : sb;
    if (mode) {
        MPI_Iallgather(s, k, MPI_INT, rb, k, rt, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Allgather(s, k, MPI_INT, rb, k, rt, comm);
    }
    int bad = 0;
    for (r = 0; r < np && !bad; ++r)
        for (i = 0; i < k && !bad; ++i)
            if (rb[(r * k + i) * stride] != val(r, i)) {
                CHECKV(0, "%s allgather(k %d inplace %d strided %d mode %d): from %d [%d] = %d",
                       cname, k, in_place, use_strided, mode, r, i, rb[(r * k + i) * stride]);
                bad = 1;
            }
    if (stride == 2)
        for (i = 0; i < k * np && !bad; ++i)
            if (rb[i * 2 + 1] != -1) {
                CHECKV(0, "%s allgather strided: hole %d overwritten", cname, i);
                bad = 1;
            }
    free(sb);
    free(rb);
}

static void t_allgatherv(MPI_Comm comm, int mode, int scale, int in_place)
{
    int i, r, total, *counts = xmalloc(sizeof(int) * (size_t)np),
                     *displs = xmalloc(sizeof(int) * (size_t)np);
    vlayout(scale, counts, displs, &total);
    int k = counts[me], *sb = xmalloc(sizeof(int) * (size_t)k),
        *rb = xmalloc(sizeof(int) * (size_t)total);
    MPI_Request req;
    for (i = 0; i < k; ++i) sb[i] = val(me, i);
    for (i = 0; i < total; ++i) rb[i] = -1;
    if (in_place)
        for (i = 0; i < k; ++i) rb[displs[me] + i] = val(me, i);
    const void *s = in_place ? MPI_IN_PLACE : sb;
    if (mode) {
        MPI_Iallgatherv(s, k, MPI_INT, rb, counts, displs, MPI_INT, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Allgatherv(s, k, MPI_INT, rb, counts, displs, MPI_INT, comm);
    }
    int bad = 0;
    for (r = 0; r < np && !bad; ++r) {
        for (i = 0; i < counts[r] && !bad; ++i)
            if (rb[displs[r] + i] != val(r, i)) {
                CHECKV(0, "%s allgatherv(scale %d inplace %d mode %d): from %d [%d] = %d", cname,
                       scale, in_place, mode, r, i, rb[displs[r] + i]);
                bad = 1;
            }
        if (!bad && (rb[displs[r] + counts[r]] != -1 || rb[displs[r] + counts[r] + 1] != -1)) {
            CHECKV(0, "%s allgatherv: gap after rank %d overwritten", cname, r);
            bad = 1;
        }
    }
    free(sb);
    free(rb);
    free(counts);
    free(displs);
}

/* ---- alltoall(v,w) ---- */
/* Element i of the block rank s sends to rank d. */
static int a2a(int s, int d, int i) { return val(s, i) + d * 100000; }

static void t_alltoall(MPI_Comm comm, int mode, int k, int in_place, int use_strided)
{
    int i, r, stride = use_strided ? 2 : 1;
    int *sb = xmalloc(sizeof(int) * (size_t)k * (size_t)np),
        *rb = xmalloc(sizeof(int) * (size_t)k * (size_t)np * 2);
    MPI_Datatype rt = use_strided && !in_place ? strided : MPI_INT;
    if (in_place) stride = 1;
    MPI_Request req;
    for (r = 0; r < np; ++r)
        for (i = 0; i < k; ++i) sb[r * k + i] = a2a(me, r, i);
    for (i = 0; i < k * np * stride; ++i) rb[i] = -1;
    if (in_place)
        for (i = 0; i < k * np; ++i) rb[i] = sb[i];
    const void *s = in_place ? MPI_IN_PLACE : sb;
    if (mode) {
        MPI_Ialltoall(s, k, MPI_INT, rb, k, rt, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Alltoall(s, k, MPI_INT, rb, k, rt, comm);
    }
    int bad = 0;
    for (r = 0; r < np && !bad; ++r)
        for (i = 0; i < k && !bad; ++i)
            if (rb[(r * k + i) * stride] != a2a(r, me, i)) {
                CHECKV(0, "%s alltoall(k %d inplace %d strided %d mode %d): from %d [%d] = %d, "
                          "want %d", cname, k, in_place, use_strided, mode, r, i,
                       rb[(r * k + i) * stride], a2a(r, me, i));
                bad = 1;
            }
    if (stride == 2)
        for (i = 0; i < k * np && !bad; ++i)
            if (rb[i * 2 + 1] != -1) {
                CHECKV(0, "%s alltoall strided: hole %d overwritten", cname, i);
                bad = 1;
            }
    free(sb);
    free(rb);
}

/* Count rank s sends to rank d (symmetric, so the in-place variant can use it too). */
static int a2av_count(int s, int d, int scale) { return ((s + d) % 4 + (s * d) % 3) * scale; }

static void t_alltoallv(MPI_Comm comm, int mode, int scale, int in_place)
{
    int i, r, soff = 0, roff = 0;
    int *sc = xmalloc(sizeof(int) * (size_t)np), *sd = xmalloc(sizeof(int) * (size_t)np),
        *rc = xmalloc(sizeof(int) * (size_t)np), *rd = xmalloc(sizeof(int) * (size_t)np);
    for (r = np - 1; r >= 0; --r) { /* reverse order, with gaps */
        sc[r] = a2av_count(me, r, scale);
        sd[r] = soff;
        soff += sc[r] + 1;
        rc[r] = a2av_count(r, me, scale);
        rd[r] = roff;
        roff += rc[r] + 3;
    }
    int *sb = xmalloc(sizeof(int) * (size_t)soff), *rb = xmalloc(sizeof(int) * (size_t)roff);
    for (r = 0; r < np; ++r)
        for (i = 0; i < sc[r]; ++i) sb[sd[r] + i] = a2a(me, r, i);
    for (i = 0; i < roff; ++i) rb[i] = -1;
    if (in_place)
        for (r = 0; r < np; ++r)
            for (i = 0; i < rc[r]; ++i) rb[rd[r] + i] = a2a(me, r, i);
    MPI_Request req;
    const void *s = in_place ? MPI_IN_PLACE : sb;
    if (mode) {
        MPI_Ialltoallv(s, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Alltoallv(s, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm);
    }
    int bad = 0;
    for (r = 0; r < np && !bad; ++r) {
        for (i = 0; i < rc[r] && !bad; ++i)
            if (rb[rd[r] + i] != a2a(r, me, i)) {
                CHECKV(0, "%s alltoallv(scale %d inplace %d mode %d): from %d [%d] = %d", cname,
                       scale, in_place, mode, r, i, rb[rd[r] + i]);
                bad = 1;
            }
        for (i = rc[r]; i < rc[r] + 3 && !bad; ++i)
            if (rb[rd[r] + i] != -1) {
                CHECKV(0, "%s alltoallv: gap after rank %d overwritten", cname, r);
                bad = 1;
            }
    }
    free(sb);
    free(rb);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* Alltoallw: blocks to/from even ranks as MPI_INT, odd ranks through the strided type. */
static void t_alltoallw(MPI_Comm comm, int mode, int k, int in_place)
{
    int i, r, soff = 0, roff = 0;
    int *sc = xmalloc(sizeof(int) * (size_t)np), *sd = xmalloc(sizeof(int) * (size_t)np),
        *rc = xmalloc(sizeof(int) * (size_t)np), *rd = xmalloc(sizeof(int) * (size_t)np);
    MPI_Datatype *st = xmalloc(sizeof(MPI_Datatype) * (size_t)np),
                 *rt = xmalloc(sizeof(MPI_Datatype) * (size_t)np);
    for (r = 0; r < np; ++r) {
        int sstr = (r % 2 && !in_place) ? 2 : 1, rstr = (r % 2) ? 2 : 1;
        sc[r] = k;
        st[r] = sstr == 2 ? strided : MPI_INT;
        sd[r] = soff * (int)sizeof(int);
        soff += k * sstr + 1;
        rc[r] = k;
        rt[r] = rstr == 2 ? strided : MPI_INT;
        rd[r] = roff * (int)sizeof(int);
        roff += k * rstr + 1;
    }
    int *sb = xmalloc(sizeof(int) * (size_t)soff), *rb = xmalloc(sizeof(int) * (size_t)roff);
    for (i = 0; i < soff; ++i) sb[i] = -5;
    for (i = 0; i < roff; ++i) rb[i] = -1;
    for (r = 0; r < np; ++r) {
        int sstr = (r % 2 && !in_place) ? 2 : 1, rstr = (r % 2) ? 2 : 1;
        for (i = 0; i < k; ++i) {
            sb[sd[r] / (int)sizeof(int) + i * sstr] = a2a(me, r, i);
            if (in_place) rb[rd[r] / (int)sizeof(int) + i * rstr] = a2a(me, r, i);
        }
    }
    MPI_Request req;
    const void *s = in_place ? MPI_IN_PLACE : sb;
    if (mode) {
        MPI_Ialltoallw(s, sc, sd, st, rb, rc, rd, rt, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Alltoallw(s, sc, sd, st, rb, rc, rd, rt, comm);
    }
    int bad = 0;
    for (r = 0; r < np && !bad; ++r) {
        int rstr = (r % 2) ? 2 : 1;
        for (i = 0; i < k && !bad; ++i) {
            int got = rb[rd[r] / (int)sizeof(int) + i * rstr];
            if (got != a2a(r, me, i)) {
                CHECKV(0, "%s alltoallw(k %d inplace %d mode %d): from %d [%d] = %d", cname, k,
                       in_place, mode, r, i, got);
                bad = 1;
            }
            if (rstr == 2 && rb[rd[r] / (int)sizeof(int) + i * 2 + 1] != -1 && !bad) {
                CHECKV(0, "%s alltoallw: hole overwritten", cname);
                bad = 1;
            }
        }
    }
    free(sb);
    free(rb);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(st);
    free(rt);
}

/* ---- reductions with predefined ops ---- */
static int expect_op(MPI_Op op, int lo, int hi, int i)
{
    int r, acc = val(lo, i);
    for (r = lo + 1; r <= hi; ++r) {
        int v = val(r, i);
        if (op == MPI_SUM) acc += v;
        else if (op == MPI_MAX) acc = v > acc ? v : acc;
        else if (op == MPI_MIN) acc = v < acc ? v : acc;
        else if (op == MPI_BXOR) acc ^= v;
    }
    return acc;
}
static const char *opname(MPI_Op op)
{
    return op == MPI_SUM ? "SUM" : op == MPI_MAX ? "MAX" : op == MPI_MIN ? "MIN" : "BXOR";
}

static void t_reduce(MPI_Comm comm, int mode, int count, MPI_Op op, int root, int in_place)
{
    int i, *sb = xmalloc(sizeof(int) * (size_t)count), *rb = xmalloc(sizeof(int) * (size_t)count);
    MPI_Request req;
    for (i = 0; i < count; ++i) {
        sb[i] = val(me, i);
        rb[i] = (in_place && me == root) ? val(me, i) : -1;
    }
    const void *s = (in_place && me == root) ? MPI_IN_PLACE : sb;
    if (mode) {
        MPI_Ireduce(s, rb, count, MPI_INT, op, root, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Reduce(s, rb, count, MPI_INT, op, root, comm);
    }
    if (me == root)
        for (i = 0; i < count; ++i)
            if (rb[i] != expect_op(op, 0, np - 1, i)) {
                CHECKV(0, "%s reduce(%s count %d root %d inplace %d mode %d): [%d] = %d, want %d",
                       cname, opname(op), count, root, in_place, mode, i, rb[i],
                       expect_op(op, 0, np - 1, i));
                break;
            }
    free(sb);
    free(rb);
}

static void t_allreduce(MPI_Comm comm, int mode, int count, MPI_Op op, int in_place)
{
    int i, *sb = xmalloc(sizeof(int) * (size_t)count), *rb = xmalloc(sizeof(int) * (size_t)count);
    MPI_Request req;
    for (i = 0; i < count; ++i) {
        sb[i] = val(me, i);
        rb[i] = in_place ? val(me, i) : -1;
    }
    const void *s = in_place ? MPI_IN_PLACE : sb;
    if (mode) {
        MPI_Iallreduce(s, rb, count, MPI_INT, op, comm, &req);
        finish(mode, &req);
    } else {
        MPI_Allreduce(s, rb, count, MPI_INT, op, comm);
    }
    for (i = 0; i < count; ++i)
        if (rb[i] != expect_op(op, 0, np - 1, i)) {
            CHECKV(0, "%s allreduce(%s count %d inplace %d mode %d): [%d] = %d, want %d", cname,
                   opname(op), count, in_place, mode, i, rb[i], expect_op(op, 0, np - 1, i));
            break;
        }
    free(sb);
    free(rb);
}

/* Reduce_scatter (block == 0: per-rank counts (r % 3) * scale + 1) or _block (count scale). */
static void t_reduce_scatter(MPI_Comm comm, int mode, int scale, int block, int in_place)
{
    int i, r, total = 0, *counts = xmalloc(sizeof(int) * (size_t)np);
    for (r = 0; r < np; ++r) {
        counts[r] = block ? scale : (r % 3) * scale + (r == 1 ? 0 : 1);
        total += counts[r];
    }
    int off = 0;
    for (r = 0; r < me; ++r) off += counts[r];
    int *sb = xmalloc(sizeof(int) * (size_t)total), *rb = xmalloc(sizeof(int) * (size_t)total);
    for (i = 0; i < total; ++i) {
        sb[i] = val(me, i);
        rb[i] = in_place ? val(me, i) : -1;
    }
    MPI_Request req;
    const void *s = in_place ? MPI_IN_PLACE : sb;
    if (block) {
        if (mode) {
            MPI_Ireduce_scatter_block(s, rb, scale, MPI_INT, MPI_SUM, comm, &req);
            finish(mode, &req);
        } else {
            MPI_Reduce_scatter_block(s, rb, scale, MPI_INT, MPI_SUM, comm);
        }
    } else {
        if (mode) {
            MPI_Ireduce_scatter(s, rb, counts, MPI_INT, MPI_SUM, comm, &req);
            finish(mode, &req);
        } else {
            MPI_Reduce_scatter(s, rb, counts, MPI_INT, MPI_SUM, comm);
        }
    }
    for (i = 0; i < counts[me]; ++i)
        if (rb[i] != expect_op(MPI_SUM, 0, np - 1, off + i)) {
            CHECKV(0, "%s reduce_scatter%s(scale %d inplace %d mode %d): [%d] = %d, want %d", cname,
                   block ? "_block" : "", scale, in_place, mode, i, rb[i],
                   expect_op(MPI_SUM, 0, np - 1, off + i));
            break;
        }
    free(sb);
    free(rb);
    free(counts);
}

static void t_scan(MPI_Comm comm, int mode, int count, int ex, int in_place)
{
    int i, *sb = xmalloc(sizeof(int) * (size_t)count), *rb = xmalloc(sizeof(int) * (size_t)count);
    MPI_Request req;
    for (i = 0; i < count; ++i) {
        sb[i] = val(me, i);
        rb[i] = in_place ? val(me, i) : -1;
    }
    const void *s = in_place ? MPI_IN_PLACE : sb;
    if (ex) {
        if (mode) {
            MPI_Iexscan(s, rb, count, MPI_INT, MPI_SUM, comm, &req);
            finish(mode, &req);
        } else {
            MPI_Exscan(s, rb, count, MPI_INT, MPI_SUM, comm);
        }
    } else {
        if (mode) {
            MPI_Iscan(s, rb, count, MPI_INT, MPI_SUM, comm, &req);
            finish(mode, &req);
        } else {
            MPI_Scan(s, rb, count, MPI_INT, MPI_SUM, comm);
        }
    }
    int hi = ex ? me - 1 : me;
    if (hi >= 0)
        for (i = 0; i < count; ++i)
            if (rb[i] != expect_op(MPI_SUM, 0, hi, i)) {
                CHECKV(0, "%s %s(count %d inplace %d mode %d): [%d] = %d, want %d", cname,
                       ex ? "exscan" : "scan", count, in_place, mode, i, rb[i],
                       expect_op(MPI_SUM, 0, hi, i));
                break;
            }
    free(sb);
    free(rb);
}

/* ---- non-commutative op: 2x2 matrix product mod 2^32 (associative, not commutative) ---- */
typedef struct { unsigned a, b, c, d; } mat;
static mat mmul(mat x, mat y) /* x * y */
{
    mat z = {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c,
             x.c * y.b + x.d * y.d};
    return z;
}
static void matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    mat *x = in, *y = inout;
    for (int i = 0; i < *len; ++i) y[i] = mmul(x[i], y[i]); /* inout = in op inout */
}
static mat mval(int r, int i)
{
    mat m = {(unsigned)(r + 2), (unsigned)(i % 5 + 1), (unsigned)(r * 3 + 1), (unsigned)(i % 7)};
    return m;
}
static mat mexpect(int lo, int hi, int i)
{
    mat acc = mval(lo, i);
    for (int r = lo + 1; r <= hi; ++r) acc = mmul(acc, mval(r, i));
    return acc;
}
static int meq(mat x, mat y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }

/* kind: 0 reduce, 1 allreduce, 2 scan, 3 exscan, 4 reduce_scatter_block, 5 reduce_scatter */
static void t_noncomm(MPI_Comm comm, int mode, int kind, int count, int root, int in_place)
{
    static const char *names[] = {"reduce", "allreduce", "scan", "exscan", "reduce_scatter_block",
                                  "reduce_scatter"};
    int i, r, total = count, *counts = xmalloc(sizeof(int) * (size_t)np), off = 0;
    if (kind == 4) total = count * np;
    if (kind == 5) {
        total = 0;
        for (r = 0; r < np; ++r) {
            counts[r] = count + (r % 2);
            if (r < me) off += counts[r];
            total += counts[r];
        }
    }
    if (kind == 4) off = me * count;
    mat *sb = xmalloc(sizeof(mat) * (size_t)total), *rb = xmalloc(sizeof(mat) * (size_t)total);
    mat junk = {7, 7, 7, 7};
    for (i = 0; i < total; ++i) {
        sb[i] = mval(me, i);
        rb[i] = in_place ? mval(me, i) : junk;
    }
    const void *s = (in_place && (kind != 0 || me == root)) ? MPI_IN_PLACE : sb;
    MPI_Request req, *rq = mode ? &req : NULL;
    switch (kind) {
    case 0:
        if (rq) MPI_Ireduce(s, rb, count, mat_t, matmul_op, root, comm, rq);
        else MPI_Reduce(s, rb, count, mat_t, matmul_op, root, comm);
        break;
    case 1:
        if (rq) MPI_Iallreduce(s, rb, count, mat_t, matmul_op, comm, rq);
        else MPI_Allreduce(s, rb, count, mat_t, matmul_op, comm);
        break;
    case 2:
        if (rq) MPI_Iscan(s, rb, count, mat_t, matmul_op, comm, rq);
        else MPI_Scan(s, rb, count, mat_t, matmul_op, comm);
        break;
    case 3:
        if (rq) MPI_Iexscan(s, rb, count, mat_t, matmul_op, comm, rq);
        else MPI_Exscan(s, rb, count, mat_t, matmul_op, comm);
        break;
    case 4:
        if (rq) MPI_Ireduce_scatter_block(s, rb, count, mat_t, matmul_op, comm, rq);
        else MPI_Reduce_scatter_block(s, rb, count, mat_t, matmul_op, comm);
        break;
    default:
        if (rq) MPI_Ireduce_scatter(s, rb, counts, mat_t, matmul_op, comm, rq);
        else MPI_Reduce_scatter(s, rb, counts, mat_t, matmul_op, comm);
        break;
    }
    if (rq) finish(mode, rq);
    int lo = 0, hi = np - 1, n = count, base = 0, check = 1;
    if (kind == 0) check = me == root;
    if (kind == 2) hi = me;
    if (kind == 3) {
        hi = me - 1;
        check = me > 0;
    }
    if (kind == 4 || kind == 5) {
        base = off;
        n = kind == 5 ? counts[me] : count;
    }
    if (check)
        for (i = 0; i < n; ++i)
            if (!meq(rb[i], mexpect(lo, hi, base + i))) {
                CHECKV(0, "%s non-commutative %s(count %d root %d inplace %d mode %d): element %d "
                          "wrong (rank order not kept?)",
                       cname, names[kind], count, root, in_place, mode, i);
                break;
            }
    free(sb);
    free(rb);
    free(counts);
}

/* ---- several nonblocking collectives at once, completed in reverse order ---- */
static void t_overlap(MPI_Comm comm)
{
    enum { K = 257 };
    int i, a[K], b[K], c[K], m[K], *d = xmalloc(sizeof(int) * (size_t)np * 3),
                            *e = xmalloc(sizeof(int) * (size_t)np * 3);
    MPI_Request rq[5];
    for (i = 0; i < K; ++i) {
        a[i] = me == 0 ? val(0, i) : -1;
        b[i] = m[i] = val(me, i);
    }
    for (i = 0; i < np * 3; ++i) d[i] = a2a(me, i / 3, i % 3);
    MPI_Ibcast(a, K, MPI_INT, 0, comm, &rq[0]);
    MPI_Iallreduce(b, c, K, MPI_INT, MPI_SUM, comm, &rq[1]);
    MPI_Ibarrier(comm, &rq[2]);
    MPI_Ialltoall(d, 3, MPI_INT, e, 3, MPI_INT, comm, &rq[3]);
    MPI_Iallreduce(MPI_IN_PLACE, m, K, MPI_INT, MPI_MAX, comm, &rq[4]);
    for (i = 4; i >= 0; --i) MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
    for (i = 0; i < K; ++i) {
        if (a[i] != val(0, i)) {
            CHECKV(0, "%s overlap: ibcast [%d] = %d", cname, i, a[i]);
            break;
        }
        if (c[i] != expect_op(MPI_SUM, 0, np - 1, i) || m[i] != expect_op(MPI_MAX, 0, np - 1, i)) {
            CHECKV(0, "%s overlap: iallreduce [%d] = %d / %d", cname, i, c[i], m[i]);
            break;
        }
    }
    for (i = 0; i < np * 3; ++i)
        if (e[i] != a2a(i / 3, me, i % 3)) {
            CHECKV(0, "%s overlap: ialltoall [%d] = %d", cname, i, e[i]);
            break;
        }
    free(d);
    free(e);
}

/* Asynchronous progress: rank 0 starts an MPI_Iallreduce, then blocks in MPI_Recv for a token
 * that rank 1 sends only after its own MPI_Wait on the same collective returned. With more than
 * two ranks the collective has rounds that need rank 0's schedule to advance inside MPI_Recv. */
static void t_async(MPI_Comm comm)
{
    enum { K = 3000 };
    int i, *a = xmalloc(sizeof(int) * K), *b = xmalloc(sizeof(int) * K), token = 0;
    MPI_Request rq;
    if (np < 2) {
        free(a);
        free(b);
        return;
    }
    for (i = 0; i < K; ++i) a[i] = val(me, i);
    MPI_Iallreduce(a, b, K, MPI_INT, MPI_SUM, comm, &rq);
    if (me == 0) {
        MPI_Recv(&token, 1, MPI_INT, 1, 99, comm, MPI_STATUS_IGNORE);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        if (me == 1) MPI_Send(&me, 1, MPI_INT, 0, 99, comm);
    }
    for (i = 0; i < K; ++i)
        if (b[i] != expect_op(MPI_SUM, 0, np - 1, i)) {
            CHECKV(0, "%s async iallreduce [%d] = %d", cname, i, b[i]);
            break;
        }
    free(a);
    free(b);
}

static void suite(MPI_Comm comm, const char *name)
{
    int mode, root, ip, i;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    cname = name;
    /* Sizes straddle the automatic switch points (docs/collectives.md): bcast 12 KiB and
     * 512 KiB, reduce/allreduce 2 KiB, gather/scatter 32 KiB per rank, allgather 80 KiB in
     * total, alltoall 256 B and 32 KiB per block, reduce_scatter 512 KiB in total. */
    const int bsz[] = {1, 7, 600, 5000, 140000};
    const int gsz[] = {1, 100, 9000};
    const int rsz[] = {1, 7, 600, 5000, 40000};
    const int nb = quick ? 3 : 5, ng = quick ? 2 : 3, nr = quick ? 3 : 5;
    /* Quick: blocking + MPI_Wait on the first communicator, blocking only on the split one. */
    const int nmodes = !quick ? 2 : comm == MPI_COMM_WORLD ? 2 : 1;
    if (!quick) { /* progress through an MPI_Test loop: a light pass (busy ranks slow the rest) */
        t_barrier(comm, 2);
        t_bcast(comm, 2, 600, np - 1, 0);
        t_gather(comm, 2, 100, 0, 0, 0);
        t_scatterv(comm, 2, 3, np / 2, 0);
        t_allgather(comm, 2, 30, 1, 0);
        t_alltoall(comm, 2, 20, 0, 1);
        t_reduce(comm, 2, 600, MPI_SUM, np - 1, 0);
        t_allreduce(comm, 2, 5000, MPI_SUM, 1);
        t_reduce_scatter(comm, 2, 300, 0, 0);
        t_scan(comm, 2, 600, 1, 0);
        t_noncomm(comm, 2, 1, 300, 0, 0);
    }
    for (mode = 0; mode < nmodes; ++mode) {
        t_barrier(comm, mode);
        for (i = 0; i < nb; ++i)
            for (root = 0; root < np; ++root)
                if (i < 3 || root == 0 || root == np - 1) t_bcast(comm, mode, bsz[i], root, 0);
        t_bcast(comm, mode, 3000, np / 2, 1);
        if (!quick) t_bcast(comm, mode, 70000, np - 1, 1);
        for (i = 0; i < ng; ++i)
            for (root = 0; root < np; ++root)
                for (ip = 0; ip < 2; ++ip)
                    if (i < 2 || root == 0 || root == np - 1) {
                        t_gather(comm, mode, gsz[i], root, ip, 0);
                        t_scatter(comm, mode, gsz[i], root, ip, 0);
                    }
        t_gather(comm, mode, 50, np - 1, 0, 1);
        t_scatter(comm, mode, 50, np / 2, 0, 1);
        for (root = 0; root < np; ++root)
            for (ip = 0; ip < 2; ++ip) {
                t_gatherv(comm, mode, 3, root, ip);
                t_scatterv(comm, mode, 3, root, ip);
            }
        t_gatherv(comm, mode, 5000, 0, 0);
        t_scatterv(comm, mode, 5000, np - 1, 1);
        for (i = 0; i < ng; ++i)
            for (ip = 0; ip < 2; ++ip) {
                t_allgather(comm, mode, gsz[i] / 3 + 1, ip, 0);
                t_alltoall(comm, mode, gsz[i], ip, 0);
            }
        t_allgather(comm, mode, 4000, 0, 0);
        t_allgather(comm, mode, 20, 0, 1);
        t_alltoall(comm, mode, 20, 0, 1);
        t_alltoall(comm, mode, 70, 0, 0);
        for (ip = 0; ip < 2; ++ip) {
            t_allgatherv(comm, mode, 2, ip);
            t_allgatherv(comm, mode, 3000, ip);
            t_alltoallv(comm, mode, 2, ip);
            t_alltoallv(comm, mode, 3000, ip);
            t_alltoallw(comm, mode, 5, ip);
            t_alltoallw(comm, mode, 900, ip);
        }
        for (i = 0; i < nr; ++i) {
            for (root = 0; root < np; ++root)
                if (i < 3 || root == 0 || root == np - 1)
                    for (ip = 0; ip < 2; ++ip) t_reduce(comm, mode, rsz[i], MPI_SUM, root, ip);
            t_reduce(comm, mode, rsz[i], MPI_MAX, np - 1, 0);
            for (ip = 0; ip < 2; ++ip) {
                t_allreduce(comm, mode, rsz[i], MPI_SUM, ip);
                t_scan(comm, mode, rsz[i], 0, ip);
                t_scan(comm, mode, rsz[i], 1, ip);
            }
            t_allreduce(comm, mode, rsz[i], MPI_BXOR, 0);
            t_allreduce(comm, mode, rsz[i], MPI_MIN, 1);
        }
        for (ip = 0; ip < 2; ++ip) {
            t_reduce_scatter(comm, mode, 1, 0, ip);
            t_reduce_scatter(comm, mode, 1, 1, ip);
            t_reduce_scatter(comm, mode, 300, 0, ip);
            t_reduce_scatter(comm, mode, 300, 1, ip);
            if (!quick) {
                t_reduce_scatter(comm, mode, 25000, 0, ip);
                t_reduce_scatter(comm, mode, 25000, 1, ip);
            }
        }
        for (int kind = 0; kind < 6; ++kind)
            for (ip = 0; ip < 2; ++ip) {
                int nroots = kind == 0 ? np : 1;
                for (root = 0; root < nroots; ++root) {
                    t_noncomm(comm, mode, kind, 1, root, ip);
                    t_noncomm(comm, mode, kind, 300, root, ip);
                }
            }
    }
    t_overlap(comm);
    t_async(comm);
}

int main(int argc, char **argv)
{
    int i;
    mt_init(&argc, &argv);
    for (i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "-q")) quick = 1;
    MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &strided);
    MPI_Type_commit(&strided);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &mat_t);
    MPI_Type_commit(&mat_t);
    MPI_Op_create(matmul_fn, 0, &matmul_op);

    suite(MPI_COMM_WORLD, "world");

    /* Ranks of the other parity, in reverse order: roots and tree shapes map differently. */
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, -mt_rank, &sub);
    suite(sub, "split");
    MPI_Comm_free(&sub);

    /* A communicator freed while a nonblocking collective on it is still pending (MPI says the
     * operation completes normally; Debian's Open MPI 4.1.4 crashes here in libnbc). */
    MPI_Comm dup;
    MPI_Request rq;
    int x = mt_rank, y = -1;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, dup, &rq);
    MPI_Comm_free(&dup);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MT_CHECK(y == mt_size * (mt_size - 1) / 2, "iallreduce on freed dup: %d", y);

    MPI_Op_free(&matmul_op);
    MPI_Type_free(&mat_t);
    MPI_Type_free(&strided);
    return mt_finalize();
}
