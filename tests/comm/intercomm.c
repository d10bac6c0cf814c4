/* Intercommunicators: MPI_Intercomm_create (leaders other than rank 0, peer communicators other
 * than MPI_COMM_WORLD, a third group that stays out), queries (remote size/group, test_inter,
 * compare), point-to-point both ways with MPI_ANY_SOURCE / MPI_ANY_TAG and probe,
 * MPI_Intercomm_merge with every combination of the high flags, and dup / split / create of an
 * intercommunicator. Needs at least 2 processes. */
#include "commtest.h"

/* Checks that ic connects my group `local` (world ranks, n) with `remote` (m), by queries and
 * by all-pairs traffic in both directions received with wildcards. */
static void check_inter(MPI_Comm ic, const int *local, int n, const int *remote, int m,
                        const char *what)
{
    int flag = 0, size = -1, rsize = -1, rank = -1, i, me = ct_world_rank();
    MPI_Group rg, wg;
    MT_CHECK(ic != MPI_COMM_NULL, "%s: MPI_COMM_NULL", what);
    if (ic == MPI_COMM_NULL)
        return;
    MPI_Comm_test_inter(ic, &flag);
    MPI_Comm_size(ic, &size);
    MPI_Comm_remote_size(ic, &rsize);
    MPI_Comm_rank(ic, &rank);
    MT_CHECK(flag, "%s: not an intercommunicator", what);
    MT_CHECK(size == n && rsize == m, "%s: size %d remote %d, expected %d and %d", what, size,
             rsize, n, m);
    if (size != n || rsize != m || rank < 0 || rank >= n)
        return;
    MT_CHECK(local[rank] == me, "%s: my rank %d should be world %d", what, rank, local[rank]);
    /* remote group as world ranks */
    {
        int *r = (int *)mt_malloc(sizeof(int) * (size_t)m);
        int *w = (int *)mt_malloc(sizeof(int) * (size_t)m);
        MPI_Comm_remote_group(ic, &rg);
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        for (i = 0; i < m; i++)
            r[i] = i;
        MPI_Group_translate_ranks(rg, m, r, wg, w);
        for (i = 0; i < m; i++)
            MT_CHECK(w[i] == remote[i], "%s: remote rank %d is world %d, expected %d", what, i,
                     w[i], remote[i]);
        MPI_Group_free(&rg);
        MPI_Group_free(&wg);
        free(r);
        free(w);
    }
    /* probe (first: the all-pairs receives below take any tag): remote rank 0 sends one
     * message to my local rank 0 */
    {
        int v = -1, pflag = 0;
        MPI_Status st;
        MPI_Request rq;
        if (rank == 0)
            MPI_Isend(&me, 1, MPI_INT, 0, 77, ic, &rq);
        if (rank == 0) {
            while (!pflag)
                MPI_Iprobe(MPI_ANY_SOURCE, 77, ic, &pflag, &st);
            MT_CHECK(st.MPI_SOURCE == 0, "%s: probe source %d", what, st.MPI_SOURCE);
            MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, 77, ic, MPI_STATUS_IGNORE);
            MT_CHECK(v == remote[0], "%s: probed message %d, expected %d", what, v, remote[0]);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
    }
    /* every local rank sends (its world rank, the receiver's remote rank) to every remote rank */
    {
        int *in = (int *)mt_malloc(sizeof(int) * 2 * (size_t)m);
        int *out = (int *)mt_malloc(sizeof(int) * 2 * (size_t)m);
        int *seen = (int *)mt_malloc(sizeof(int) * (size_t)m);
        MPI_Request *rq = (MPI_Request *)mt_malloc(sizeof(MPI_Request) * 2 * (size_t)m);
        MPI_Status *st = (MPI_Status *)mt_malloc(sizeof(MPI_Status) * 2 * (size_t)m);
        for (i = 0; i < m; i++) {
            seen[i] = 0;
            MPI_Irecv(&in[2 * i], 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, ic, &rq[i]);
        }
        for (i = 0; i < m; i++) {
            out[2 * i] = me;
            out[2 * i + 1] = i;
            MPI_Isend(&out[2 * i], 2, MPI_INT, i, 30 + rank, ic, &rq[m + i]);
        }
        MPI_Waitall(2 * m, rq, st);
        for (i = 0; i < m; i++) {
            int src = st[i].MPI_SOURCE;
            MT_CHECK(src >= 0 && src < m, "%s: source %d", what, src);
            if (src < 0 || src >= m)
                continue;
            seen[src]++;
            MT_CHECK(st[i].MPI_TAG == 30 + src, "%s: tag %d from %d", what, st[i].MPI_TAG, src);
            MT_CHECK(in[2 * i] == remote[src] && in[2 * i + 1] == rank,
                     "%s: from remote %d got (%d, %d), expected (%d, %d)", what, src, in[2 * i],
                     in[2 * i + 1], remote[src], rank);
        }
        for (i = 0; i < m; i++)
            MT_CHECK(seen[i] == 1, "%s: %d messages from remote %d", what, seen[i], i);
        free(in);
        free(out);
        free(seen);
        free(rq);
        free(st);
    }
}

/* World ranks of colour `col` under world-rank -> colour f, ascending (or by key). */
static int members_of(int col, int ncolors, int *out)
{
    int i, n = 0;
    for (i = 0; i < mt_size; i++)
        if (i % ncolors == col)
            out[n++] = i;
    return n;
}

static void check_merge(MPI_Comm ic, const int *local, int n, const int *remote, int m,
                        int high, int rhigh, int am_first_on_tie)
{
    MPI_Comm mc;
    int *want = (int *)mt_malloc(sizeof(int) * (size_t)(n + m)), i, local_first;
    MPI_Intercomm_merge(ic, high, &mc);
    if (high != rhigh) {
        local_first = !high;
    } else {
        /* The standard leaves the order open: find it out, then check it is one of the two. */
        int rank, got_n, *got = ct_members(mc, &got_n);
        MPI_Comm_rank(mc, &rank);
        local_first = got_n == n + m && got[0] == local[0];
        MT_CHECK(got_n == n + m && (got[0] == local[0] || got[0] == remote[0]),
                 "merge with equal high flags: first member %d", got[0]);
        free(got);
        (void)am_first_on_tie;
    }
    for (i = 0; i < n + m; i++)
        want[i] = local_first ? (i < n ? local[i] : remote[i - n])
                              : (i < m ? remote[i] : local[i - m]);
    ct_check_comm(mc, want, n + m, "merge");
    MPI_Comm_free(&mc);
    free(want);
}

int main(int argc, char **argv)
{
    int *a, *b, na, nb, col, i;
    MPI_Comm local, ic, d;
    mt_init(&argc, &argv);
    if (mt_size < 2) {
        printf(" No Errors\n");
        MPI_Finalize();
        return 0;
    }
    a = (int *)mt_malloc(sizeof(int) * (size_t)mt_size);
    b = (int *)mt_malloc(sizeof(int) * (size_t)mt_size);

    /* Two groups: even and odd world ranks; leaders are local rank 0; peer is WORLD. */
    col = mt_rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, col, mt_rank, &local);
    na = members_of(col, 2, a);
    nb = members_of(1 - col, 2, b);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, col == 0 ? 1 : 0, 123, &ic);
    check_inter(ic, a, na, b, nb, "even/odd");
    {
        int res;
        MPI_Comm_dup(ic, &d);
        MPI_Comm_compare(ic, d, &res);
        MT_CHECK(res == MPI_CONGRUENT, "compare(ic, dup) = %d", res);
        check_inter(d, a, na, b, nb, "dup of intercomm");
        MPI_Comm_free(&d);
    }
    check_merge(ic, a, na, b, nb, col, 1 - col, 0);
    check_merge(ic, a, na, b, nb, 1 - col, col, 0);
    check_merge(ic, a, na, b, nb, 0, 0, 0);
    check_merge(ic, a, na, b, nb, 1, 1, 0);

    /* split of an intercommunicator: colour = local rank % 2, keys reversed */
    {
        int lr, c2, la = 0, lb = 0, *sa = (int *)mt_malloc(sizeof(int) * (size_t)mt_size),
                    *sb = (int *)mt_malloc(sizeof(int) * (size_t)mt_size);
        MPI_Comm_rank(ic, &lr);
        c2 = lr % 2;
        for (i = na - 1; i >= 0; i--)
            if (i % 2 == c2)
                sa[la++] = a[i];
        for (i = nb - 1; i >= 0; i--)
            if (i % 2 == c2)
                sb[lb++] = b[i];
        MPI_Comm_split(ic, c2, -lr, &d);
        if (lb == 0) {
            MT_CHECK(d == MPI_COMM_NULL, "intercomm split with an empty remote side");
        } else {
            check_inter(d, sa, la, sb, lb, "split of intercomm");
            MPI_Comm_free(&d);
        }
        /* MPI_UNDEFINED on one side only: everyone gets MPI_COMM_NULL */
        MPI_Comm_split(ic, col == 0 ? MPI_UNDEFINED : 0, 0, &d);
        MT_CHECK(d == MPI_COMM_NULL, "intercomm split with one side undefined");
        free(sa);
        free(sb);
    }
    /* create on an intercommunicator: each side keeps its first half */
    {
        MPI_Group lg, hg;
        int ha = (na + 1) / 2, hb = (nb + 1) / 2, lr;
        int *r = (int *)mt_malloc(sizeof(int) * (size_t)na);
        MPI_Comm_group(ic, &lg);
        for (i = 0; i < ha; i++)
            r[i] = i;
        MPI_Group_incl(lg, ha, r, &hg);
        MPI_Comm_create(ic, hg, &d);
        MPI_Comm_rank(ic, &lr);
        if (lr < ha) {
            check_inter(d, a, ha, b, hb, "create on intercomm");
            MPI_Comm_free(&d);
        } else {
            MT_CHECK(d == MPI_COMM_NULL, "create on intercomm: non-member got a communicator");
        }
        MPI_Group_free(&hg);
        MPI_Group_free(&lg);
        free(r);
    }
    MPI_Comm_free(&ic);
    MPI_Comm_free(&local);

    /* Three groups by world rank % 3; only groups 0 and 1 connect, with the last local rank as
     * leader and a reversed duplicate of WORLD as peer communicator. */
    if (mt_size >= 2) {
        MPI_Comm peer;
        int ncol = mt_size >= 3 ? 3 : 2;
        col = mt_rank % ncol;
        MPI_Comm_split(MPI_COMM_WORLD, 0, mt_size - mt_rank, &peer); /* peer rank = size-1-world */
        MPI_Comm_split(MPI_COMM_WORLD, col, mt_rank, &local);
        if (col < 2) {
            na = members_of(col, ncol, a);
            nb = members_of(1 - col, ncol, b);
            /* remote leader: the last member of the other group, as a rank of peer */
            MPI_Intercomm_create(local, na - 1, peer, mt_size - 1 - b[nb - 1], 5, &ic);
            check_inter(ic, a, na, b, nb, "groups 0 and 1 of 3");
            check_merge(ic, a, na, b, nb, col, 1 - col, 0);
            MPI_Comm_free(&ic);
        }
        MPI_Comm_free(&local);
        MPI_Comm_free(&peer);
    }
    free(a);
    free(b);
    return mt_finalize();
}
