/* impicoll_test: the multi-cluster collectives (src/coll/impi.cpp) on the spots the general
 * collective test (tests/coll/coll_test.c, also run here under fake cluster layouts) does not
 * aim at:
 *   - message sizes at the IMPI_C_COLL_XSIZE cut-over, byte-exact (1023, 1024, 1025 bytes per
 *     block; the default XSIZE of 1024), for bcast, gather, scatter, allgather, alltoall,
 *     reduce, allreduce, with every root;
 *   - a non-commutative op (2x2 matrix product) for reduce with every root and allreduce, on
 *     communicators whose ranks interleave the clusters in different ways (permuted splits), so
 *     the ordered reduction's runs are short and long;
 *   - bitwise-equal double allreduce results on every rank;
 *   - many nonblocking collectives outstanding at once on one communicator, kinds the
 *     multi-cluster module builds mixed with kinds it hands to the single-cluster module,
 *     completed in reverse order (their tags must never cross).
 * Standard MPI only (runs under MPICH and Open MPI too). Prints " No Errors" on success.
 */
#include "../mp/mptest.h"

static MPI_Op matmul_op;
static MPI_Datatype mat_t;

/* inout = in x inout for 2x2 matrices of unsigned (mod 2^32), row-major. */
static void matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    unsigned *a = in, *b = inout;
    for (int i = 0; i < *len; ++i, a += 4, b += 4) {
        unsigned c0 = a[0] * b[0] + a[1] * b[2], c1 = a[0] * b[1] + a[1] * b[3];
        unsigned c2 = a[2] * b[0] + a[3] * b[2], c3 = a[2] * b[1] + a[3] * b[3];
        b[0] = c0, b[1] = c1, b[2] = c2, b[3] = c3;
    }
}
static void mat_of(int r, int i, unsigned *m)
{
    m[0] = (unsigned)(r + 2 + i), m[1] = (unsigned)(r % 2 + 1), m[2] = (unsigned)(i % 3 + 1);
    m[3] = (unsigned)(r * r % 7);
}
static unsigned char bval(int r, int i) { return (unsigned char)(r * 31 + i * 7 + 1); }

static int me, np;
static const char *cname;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) MPI_Abort(MPI_COMM_WORLD, 2);
    return p;
}

/* Blocks of `len` bytes: the XSIZE boundary cases. */
static void t_bytes(MPI_Comm comm, int len)
{
    unsigned char *s = xmalloc((size_t)len * np), *r = xmalloc((size_t)len * np);
    for (int root = 0; root < np; ++root) {
        /* bcast */
        for (int i = 0; i < len; ++i) r[i] = me == root ? bval(root, i) : 0;
        MPI_Bcast(r, len, MPI_UNSIGNED_CHAR, root, comm);
        for (int i = 0; i < len; ++i)
            if (r[i] != bval(root, i)) {
                MT_CHECK(0, "%s bcast len %d root %d [%d] = %d", cname, len, root, i, r[i]);
                break;
            }
        /* gather */
        for (int i = 0; i < len; ++i) s[i] = bval(me, i);
        memset(r, 0, (size_t)len * np);
        MPI_Gather(s, len, MPI_UNSIGNED_CHAR, r, len, MPI_UNSIGNED_CHAR, root, comm);
        if (me == root)
            for (int p = 0; p < np; ++p)
                for (int i = 0; i < len; ++i)
                    if (r[p * len + i] != bval(p, i)) {
                        MT_CHECK(0, "%s gather len %d root %d from %d [%d]", cname, len, root,
                                 p, i);
                        p = np;
                        break;
                    }
        /* scatter */
        if (me == root)
            for (int p = 0; p < np; ++p)
                for (int i = 0; i < len; ++i) s[p * len + i] = bval(p + 100, i);
        memset(r, 0, (size_t)(unsigned)len);
        MPI_Scatter(s, len, MPI_UNSIGNED_CHAR, r, len, MPI_UNSIGNED_CHAR, root, comm);
        for (int i = 0; i < len; ++i)
            if (r[i] != bval(me + 100, i)) {
                MT_CHECK(0, "%s scatter len %d root %d [%d]", cname, len, root, i);
                break;
            }
        /* reduce (BXOR on bytes, exact) */
        for (int i = 0; i < len; ++i) s[i] = bval(me, i);
        MPI_Reduce(s, r, len, MPI_UNSIGNED_CHAR, MPI_BXOR, root, comm);
        if (me == root)
            for (int i = 0; i < len; ++i) {
                unsigned char x = 0;
                for (int p = 0; p < np; ++p) x ^= bval(p, i);
                if (r[i] != x) {
                    MT_CHECK(0, "%s reduce len %d root %d [%d]", cname, len, root, i);
                    break;
                }
            }
    }
    /* allreduce */
    for (int i = 0; i < len; ++i) s[i] = bval(me, i);
    MPI_Allreduce(s, r, len, MPI_UNSIGNED_CHAR, MPI_BXOR, comm);
    for (int i = 0; i < len; ++i) {
        unsigned char x = 0;
        for (int p = 0; p < np; ++p) x ^= bval(p, i);
        if (r[i] != x) {
            MT_CHECK(0, "%s allreduce len %d [%d]", cname, len, i);
            break;
        }
    }
    /* allgather */
    memset(r, 0, (size_t)len * np);
    MPI_Allgather(s, len, MPI_UNSIGNED_CHAR, r, len, MPI_UNSIGNED_CHAR, comm);
    for (int p = 0; p < np; ++p)
        for (int i = 0; i < len; ++i)
            if (r[p * len + i] != bval(p, i)) {
                MT_CHECK(0, "%s allgather len %d from %d [%d]", cname, len, p, i);
                p = np;
                break;
            }
    /* alltoall: block for q from p holds bval(p * np + q, i) */
    for (int q = 0; q < np; ++q)
        for (int i = 0; i < len; ++i) s[q * len + i] = bval(me * np + q, i);
    memset(r, 0, (size_t)len * np);
    MPI_Alltoall(s, len, MPI_UNSIGNED_CHAR, r, len, MPI_UNSIGNED_CHAR, comm);
    for (int p = 0; p < np; ++p)
        for (int i = 0; i < len; ++i)
            if (r[p * len + i] != bval(p * np + me, i)) {
                MT_CHECK(0, "%s alltoall len %d from %d [%d]", cname, len, p, i);
                p = np;
                break;
            }
    free(s);
    free(r);
}

/* Non-commutative reduce (every root) and allreduce, in place and not. */
static void t_noncomm(MPI_Comm comm, int count)
{
    unsigned *s = xmalloc(16u * count), *r = xmalloc(16u * count), *want = xmalloc(16u * count);
    for (int i = 0; i < count; ++i) {
        unsigned acc[4], m[4];
        mat_of(np - 1, i, acc);
        for (int p = np - 2; p >= 0; --p) {
            mat_of(p, i, m);
            int one = 1;
            matmul_fn(m, acc, &one, NULL);
        }
        memcpy(want + 4 * i, acc, sizeof acc);
        mat_of(me, i, s + 4 * i);
    }
    for (int root = 0; root < np; ++root)
        for (int ip = 0; ip < 2; ++ip) {
            if (ip && me == root) memcpy(r, s, 16u * count);
            else memset(r, 0, 16u * count);
            MPI_Reduce(ip && me == root ? MPI_IN_PLACE : s, r, count, mat_t, matmul_op, root, comm);
            if (me == root)
                MT_CHECK(!memcmp(r, want, 16u * count), "%s noncomm reduce count %d root %d ip %d",
                         cname, count, root, ip);
        }
    for (int ip = 0; ip < 2; ++ip) {
        if (ip) memcpy(r, s, 16u * count);
        else memset(r, 0, 16u * count);
        MPI_Allreduce(ip ? MPI_IN_PLACE : s, r, count, mat_t, matmul_op, comm);
        MT_CHECK(!memcmp(r, want, 16u * count), "%s noncomm allreduce count %d ip %d", cname,
                 count, ip);
    }
    free(s);
    free(r);
    free(want);
}

/* Double sums: every rank must hold the very same bits. */
static void t_bitwise(MPI_Comm comm, int count)
{
    double *s = xmalloc(sizeof(double) * count), *r = xmalloc(sizeof(double) * count);
    double *all = xmalloc(sizeof(double) * count * np);
    for (int i = 0; i < count; ++i) s[i] = 1.0 / (me + 3) + i * 1e-7 * (me % 3 ? 1 : -1);
    MPI_Allreduce(s, r, count, MPI_DOUBLE, MPI_SUM, comm);
    MPI_Allgather(r, count, MPI_DOUBLE, all, count, MPI_DOUBLE, comm);
    for (int p = 0; p < np; ++p)
        MT_CHECK(!memcmp(all + (size_t)p * count, r, sizeof(double) * count),
                 "%s allreduce count %d: rank %d differs from rank %d", cname, count, p, me);
    free(s);
    free(r);
    free(all);
}

/* Outstanding nonblocking collectives of mixed kinds, completed in reverse order. */
static void t_mixed(MPI_Comm comm)
{
    enum { K = 8, N = 300 };
    MPI_Request rq[K];
    int *bc = xmalloc(sizeof(int) * N), *ar = xmalloc(sizeof(int) * N);
    int *ag = xmalloc(sizeof(int) * np), *sc = xmalloc(sizeof(int) * N);
    int *a2s = xmalloc(sizeof(int) * np), *a2r = xmalloc(sizeof(int) * np);
    int *cnt = xmalloc(sizeof(int) * np), *dsp = xmalloc(sizeof(int) * np);
    int *agv = xmalloc(sizeof(int) * np);
    int one = me + 1, allsum = 0, red = 0, dummy = 0;
    for (int i = 0; i < N; ++i) bc[i] = me == np - 1 ? i * 3 : -1;
    for (int i = 0; i < np; ++i) a2s[i] = me * 100 + i, cnt[i] = 1, dsp[i] = np - 1 - i;
    MPI_Ibcast(bc, N, MPI_INT, np - 1, comm, &rq[0]);
    MPI_Iscan(&one, sc, 1, MPI_INT, MPI_SUM, comm, &rq[1]);              /* flat */
    MPI_Iallreduce(&one, &allsum, 1, MPI_INT, MPI_SUM, comm, &rq[2]);
    MPI_Iallgatherv(&me, 1, MPI_INT, agv, cnt, dsp, MPI_INT, comm, &rq[3]); /* flat */
    MPI_Ialltoall(a2s, 1, MPI_INT, a2r, 1, MPI_INT, comm, &rq[4]);
    MPI_Iallgather(&me, 1, MPI_INT, ag, 1, MPI_INT, comm, &rq[5]);
    MPI_Ireduce(&one, &red, 1, MPI_INT, MPI_MAX, 0, comm, &rq[6]);
    MPI_Ibarrier(comm, &rq[7]);
    (void)dummy;
    (void)ar;
    for (int k = K - 1; k >= 0; --k) MPI_Wait(&rq[k], MPI_STATUS_IGNORE);
    for (int i = 0; i < N; ++i)
        if (bc[i] != i * 3) {
            MT_CHECK(0, "%s mixed ibcast [%d] = %d", cname, i, bc[i]);
            break;
        }
    MT_CHECK(sc[0] == (me + 1) * (me + 2) / 2, "%s mixed iscan %d", cname, sc[0]);
    MT_CHECK(allsum == np * (np + 1) / 2, "%s mixed iallreduce %d", cname, allsum);
    for (int i = 0; i < np; ++i) {
        MT_CHECK(agv[np - 1 - i] == i, "%s mixed iallgatherv [%d] = %d", cname, np - 1 - i,
                 agv[np - 1 - i]);
        MT_CHECK(a2r[i] == i * 100 + me, "%s mixed ialltoall [%d] = %d", cname, i, a2r[i]);
        MT_CHECK(ag[i] == i, "%s mixed iallgather [%d] = %d", cname, i, ag[i]);
    }
    if (me == 0) MT_CHECK(red == np, "%s mixed ireduce %d", cname, red);
    free(bc), free(ar), free(ag), free(sc), free(a2s), free(a2r), free(cnt), free(dsp), free(agv);
}

static void suite(MPI_Comm comm, const char *name)
{
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    cname = name;
    const int lens[] = {1, 1023, 1024, 1025, 3000};
    for (int i = 0; i < 5; ++i) t_bytes(comm, lens[i]);
    t_noncomm(comm, 1);
    t_noncomm(comm, 70); /* 1120 bytes: above XSIZE */
    t_bitwise(comm, 3);
    t_bitwise(comm, 1000);
    t_mixed(comm);
    MPI_Barrier(comm);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
    MPI_Type_contiguous(4, MPI_UNSIGNED, &mat_t);
    MPI_Type_commit(&mat_t);
    MPI_Op_create(matmul_fn, 0, &matmul_op);

    suite(MPI_COMM_WORLD, "world");
    /* Permuted orders: reversed, and odd ranks first; clusters interleave differently. */
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, 0, mt_size - mt_rank, &c);
    suite(c, "reversed");
    MPI_Comm_free(&c);
    MPI_Comm_split(MPI_COMM_WORLD, 0, (mt_rank % 2) * mt_size + mt_rank, &c);
    suite(c, "evens-odds");
    MPI_Comm_free(&c);
    /* A subset: without rank 0 (possibly fewer clusters, or one). */
    MPI_Comm_split(MPI_COMM_WORLD, mt_rank == 0 ? MPI_UNDEFINED : 1, mt_rank, &c);
    if (c != MPI_COMM_NULL) {
        suite(c, "no-rank-0");
        MPI_Comm_free(&c);
    }

    MPI_Op_free(&matmul_op);
    MPI_Type_free(&mat_t);
    return mt_finalize();
}
