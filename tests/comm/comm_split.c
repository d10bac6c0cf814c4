/* MPI_Comm_split with many colours and keys (ties broken by the parent rank, MPI_UNDEFINED,
 * negative and equal keys), nested splits, split of a split, and MPI_Comm_split_type
 * (MPI_COMM_TYPE_SHARED, MPI_UNDEFINED). Every result is checked by traffic (commtest.h)
 * against the membership computed serially here. */
#include "commtest.h"

/* The expected world ranks of my part of split(parent, color_of, key_of). */
static int expect(const int *pworld, int pn, int (*color_of)(int, int), int (*key_of)(int, int),
                  int arg, int *out)
{
    int i, j, n = 0, prank = -1, me = ct_world_rank();
    int *keys = (int *)mt_malloc(sizeof(int) * (size_t)pn);
    for (i = 0; i < pn; i++)
        if (pworld[i] == me)
            prank = i;
    if (color_of(prank, arg) == MPI_UNDEFINED) {
        free(keys);
        return 0;
    }
    for (i = 0; i < pn; i++) {
        if (color_of(i, arg) != color_of(prank, arg))
            continue;
        /* insertion by (key, parent rank) */
        for (j = n; j > 0 && keys[j - 1] > key_of(i, arg); j--) {
            keys[j] = keys[j - 1];
            out[j] = out[j - 1];
        }
        keys[j] = key_of(i, arg);
        out[j] = pworld[i];
        n++;
    }
    free(keys);
    return n;
}

static int color_mod(int r, int k) { return r % k; }
static int color_undef(int r, int k) { return r % k == 1 ? MPI_UNDEFINED : r % k; }
static int color_big(int r, int k) { return (r * 7919 + k) % 3 * 1000000; }
static int key_rev(int r, int k) { (void)k; return -r; }
static int key_same(int r, int k) { (void)r; (void)k; return 5; }
static int key_mix(int r, int k) { return (r * 5 + k) % 3 - 1; }

static void one_split(MPI_Comm parent, int (*color_of)(int, int), int (*key_of)(int, int),
                      int arg, const char *what)
{
    int pn, prank, n, *pworld = ct_members(parent, &pn);
    int *want = (int *)mt_malloc(sizeof(int) * (size_t)pn);
    MPI_Comm c;
    MPI_Comm_rank(parent, &prank);
    n = expect(pworld, pn, color_of, key_of, arg, want);
    MPI_Comm_split(parent, color_of(prank, arg), key_of(prank, arg), &c);
    if (n == 0) {
        MT_CHECK(c == MPI_COMM_NULL, "%s(%d): expected MPI_COMM_NULL", what, arg);
    } else {
        ct_check_comm(c, want, n, what);
        MPI_Comm_free(&c);
    }
    free(pworld);
    free(want);
}

int main(int argc, char **argv)
{
    int k;
    MPI_Comm half, quarter;
    mt_init(&argc, &argv);
    for (k = 1; k <= mt_size + 1; k++) {
        one_split(MPI_COMM_WORLD, color_mod, key_rev, k, "colour r%k, reversed keys");
        one_split(MPI_COMM_WORLD, color_mod, key_same, k, "colour r%k, equal keys");
        one_split(MPI_COMM_WORLD, color_undef, key_mix, k, "some MPI_UNDEFINED, mixed keys");
    }
    one_split(MPI_COMM_WORLD, color_big, key_mix, 3, "large colours");
    /* Nested: split a split (different context ids in each half), then the halves again. */
    MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, mt_rank, &half);
    for (k = 1; k <= 3; k++) {
        one_split(half, color_mod, key_rev, k, "split of a split");
        one_split(half, color_undef, key_mix, k, "split of a split with MPI_UNDEFINED");
    }
    MPI_Comm_split(half, 0, 0, &quarter);
    {
        int n, *w = ct_members(half, &n);
        ct_check_comm(quarter, w, n, "split of a split, one colour");
        free(w);
    }
    MPI_Comm_free(&quarter);
    MPI_Comm_free(&half);
    /* Everyone MPI_UNDEFINED. */
    MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, &half);
    MT_CHECK(half == MPI_COMM_NULL, "all MPI_UNDEFINED: expected MPI_COMM_NULL");
    /* split_type: the test runs on one host, so SHARED gives a copy of the parent's group in key
     * order; MPI_UNDEFINED gives MPI_COMM_NULL. */
    {
        MPI_Comm s;
        int n, *w = ct_members(MPI_COMM_WORLD, &n);
        char host[MPI_MAX_PROCESSOR_NAME], h0[MPI_MAX_PROCESSOR_NAME];
        int len, same = 1, i, all_same = 0;
        MPI_Get_processor_name(host, &len);
        /* Are all ranks on this host? (rank 0's name against everyone's) */
        if (mt_rank == 0)
            strcpy(h0, host);
        if (mt_rank == 0) {
            for (i = 1; i < mt_size; i++)
                MPI_Send(h0, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, i, 20, MPI_COMM_WORLD);
        } else {
            MPI_Recv(h0, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, 20, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        }
        same = strcmp(h0, host) == 0;
        all_same = mt_sum(same) == mt_size;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, mt_size - mt_rank,
                            MPI_INFO_NULL, &s);
        if (all_same) {
            for (i = 0; i < n; i++)
                w[i] = n - 1 - i;
            ct_check_comm(s, w, n, "split_type SHARED (reversed keys)");
        } else {
            MT_CHECK(s != MPI_COMM_NULL, "split_type SHARED gave MPI_COMM_NULL");
        }
        if (s != MPI_COMM_NULL)
            MPI_Comm_free(&s);
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &s);
        MT_CHECK(s == MPI_COMM_NULL, "split_type MPI_UNDEFINED: expected MPI_COMM_NULL");
        /* Some ranks UNDEFINED, the others SHARED. */
        MPI_Comm_split_type(MPI_COMM_WORLD, mt_rank % 2 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED,
                            0, MPI_INFO_NULL, &s);
        MT_CHECK((mt_rank % 2) == (s == MPI_COMM_NULL), "mixed split_type: wrong result");
        if (s != MPI_COMM_NULL) {
            int sz;
            MPI_Comm_size(s, &sz);
            if (all_same)
                MT_CHECK(sz == (mt_size + 1) / 2, "mixed split_type: size %d", sz);
            MPI_Comm_free(&s);
        }
        free(w);
    }
    return mt_finalize();
}
