/* attr_cluster: the IMPI cluster attributes MPI_CLIENT_SIZE, MPI_CLIENT_COLOR, MPI_HOST_SIZE and
 * MPI_HOST_COLOR (an IMPI extension, not standard MPI: under an MPI without them the test only
 * says " No Errors").
 *   argv[1] (optional): the expected cluster index of every world rank, "0,0,1,1" (what the job's
 *   WANMPI_IMPI_FAKE_CLUSTERS says). Without it the layout is not assumed (the same program may
 *   run across real clusters) but must be consistent: the same MPI_CLIENT_SIZE everywhere, every
 *   color 0..size-1 used, colors non-decreasing in world rank (IMPI numbers client 0's ranks
 *   first); so one rank means one cluster.
 *   - all four are set on MPI_COMM_WORLD, MPI_COMM_SELF, a dup and a split communicator, with the
 *     caller's values (the same whatever the communicator);
 *   - CLIENT_SIZE = number of clusters, CLIENT_COLOR = this rank's cluster; HOST_SIZE >= CLIENT_SIZE,
 *     0 <= HOST_COLOR < HOST_SIZE, and ranks with different CLIENT_COLOR have different HOST_COLOR;
 *   - MPI_Comm_split(color = CLIENT_COLOR) gives one communicator per cluster with the expected
 *     members (the use the IMPI standard has in mind);
 *   - they cannot be set, deleted or freed (MPI_ERR_KEYVAL), and a dup does not copy them as
 *     ordinary attributes (still there, still the same values). */
#include "mptest.h"

#ifdef MPI_CLIENT_SIZE
static int get_int(MPI_Comm comm, int key, const char *what)
{
    void *v = NULL;
    int flag = -1;
    MT_MPI(MPI_Comm_get_attr(comm, key, &v, &flag));
    MT_CHECK(flag == 1 && v != NULL, "%s: flag %d value %p", what, flag, v);
    return flag == 1 && v ? *(int *)v : -1;
}

static int expected[1024];

static void check_comm(MPI_Comm comm, const char *name, int nclusters)
{
    char what[96];
    int cs, cc, hs, hc, i, *colors, *hosts;

    snprintf(what, sizeof what, "%s MPI_CLIENT_SIZE", name);
    cs = get_int(comm, MPI_CLIENT_SIZE, what);
    snprintf(what, sizeof what, "%s MPI_CLIENT_COLOR", name);
    cc = get_int(comm, MPI_CLIENT_COLOR, what);
    snprintf(what, sizeof what, "%s MPI_HOST_SIZE", name);
    hs = get_int(comm, MPI_HOST_SIZE, what);
    snprintf(what, sizeof what, "%s MPI_HOST_COLOR", name);
    hc = get_int(comm, MPI_HOST_COLOR, what);
    MT_CHECK(cs == nclusters, "%s: MPI_CLIENT_SIZE %d, expected %d", name, cs, nclusters);
    MT_CHECK(cc == expected[mt_rank], "%s: MPI_CLIENT_COLOR %d, expected %d", name, cc,
             expected[mt_rank]);
    MT_CHECK(cc >= 0 && cc < cs, "%s: MPI_CLIENT_COLOR %d not in 0..%d", name, cc, cs - 1);
    MT_CHECK(hs >= cs, "%s: MPI_HOST_SIZE %d < MPI_CLIENT_SIZE %d", name, hs, cs);
    MT_CHECK(hc >= 0 && hc < hs, "%s: MPI_HOST_COLOR %d not in 0..%d", name, hc, hs - 1);

    /* Ranks of different clusters are on different IMPI hosts. */
    colors = malloc(sizeof(int) * (size_t)mt_size);
    hosts = malloc(sizeof(int) * (size_t)mt_size);
    MT_MPI(MPI_Allgather(&cc, 1, MPI_INT, colors, 1, MPI_INT, MPI_COMM_WORLD));
    MT_MPI(MPI_Allgather(&hc, 1, MPI_INT, hosts, 1, MPI_INT, MPI_COMM_WORLD));
    for (i = 0; i < mt_size; ++i)
        MT_CHECK(colors[i] == cc || hosts[i] != hc,
                 "%s: rank %d (cluster %d) and rank %d (cluster %d) share IMPI host %d", name, i,
                 colors[i], mt_rank, cc, hc);
    free(colors);
    free(hosts);
}
#endif

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
#ifdef MPI_CLIENT_SIZE
    {
        int nclusters = 1, i, n = 0, members = 0, sub_size, sub_rank, key;
        const char *p;
        MPI_Comm dup, split, bycluster;

        MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        MT_CHECK(mt_size <= 1024, "too many ranks (%d)", mt_size);
        for (i = 0; i < mt_size && i < 1024; ++i)
            expected[i] = 0;
        if (argc > 1) {
            for (p = argv[1]; *p && n < 1024;) {
                expected[n++] = atoi(p);
                while (*p && *p != ',')
                    ++p;
                if (*p == ',')
                    ++p;
            }
            MT_CHECK(n == mt_size, "argument lists %d clusters for %d ranks", n, mt_size);
        } else {
            /* Learn the layout from MPI_COMM_WORLD and check that it is consistent. */
            int cs = -1, cc = -1, *all = malloc(sizeof(int) * 2 * (size_t)mt_size), used = 0;
            void *v = NULL;
            int flag = 0;
            MT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_CLIENT_SIZE, &v, &flag));
            if (flag && v)
                cs = *(int *)v;
            MT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_CLIENT_COLOR, &v, &flag));
            if (flag && v)
                cc = *(int *)v;
            {
                int mine[2] = {cs, cc};
                MT_MPI(MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD));
            }
            for (i = 0; i < mt_size && i < 1024; ++i) {
                MT_CHECK(all[2 * i] == cs, "rank %d says MPI_CLIENT_SIZE %d, rank %d says %d", i,
                         all[2 * i], mt_rank, cs);
                expected[i] = all[2 * i + 1];
                MT_CHECK(i == 0 ? expected[i] == 0
                                : expected[i] == expected[i - 1] ||
                                      expected[i] == expected[i - 1] + 1,
                         "MPI_CLIENT_COLOR of world ranks %d, %d: %d, %d (clusters must be "
                         "numbered in world-rank order, each used)",
                         i - 1, i, i ? expected[i - 1] : -1, expected[i]);
                if (expected[i] + 1 > used)
                    used = expected[i] + 1;
            }
            MT_CHECK(used == cs, "%d clusters used, MPI_CLIENT_SIZE %d", used, cs);
            free(all);
        }
        for (i = 0; i < mt_size && i < 1024; ++i)
            if (expected[i] + 1 > nclusters)
                nclusters = expected[i] + 1;

        check_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD", nclusters);
        check_comm(MPI_COMM_SELF, "MPI_COMM_SELF", nclusters);
        MT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
        check_comm(dup, "dup", nclusters);
        /* reversed odd/even split: the attributes do not depend on the communicator */
        MT_MPI(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, mt_size - mt_rank, &split));
        check_comm(split, "split", nclusters);

        /* One communicator per cluster. */
        MT_MPI(MPI_Comm_split(MPI_COMM_WORLD, expected[mt_rank], mt_rank, &bycluster));
        for (i = 0; i < mt_size; ++i)
            members += expected[i] == expected[mt_rank];
        for (i = 0, n = 0; i < mt_rank; ++i)
            n += expected[i] == expected[mt_rank];
        MT_MPI(MPI_Comm_size(bycluster, &sub_size));
        MT_MPI(MPI_Comm_rank(bycluster, &sub_rank));
        MT_CHECK(sub_size == members, "cluster communicator has %d ranks, expected %d", sub_size,
                 members);
        MT_CHECK(sub_rank == n, "rank %d in the cluster communicator, expected %d", sub_rank, n);
        check_comm(bycluster, "per-cluster", nclusters);

        /* Predefined: read-only. */
        for (key = 0; key < 4; ++key) {
            int kv[4] = {MPI_CLIENT_SIZE, MPI_CLIENT_COLOR, MPI_HOST_SIZE, MPI_HOST_COLOR};
            int k = kv[key], rc, cls = -1;
            rc = MPI_Comm_set_attr(dup, k, &members);
            MPI_Error_class(rc, &cls);
            MT_CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_KEYVAL, "set_attr on 0x%x: class %d", k,
                     cls);
            rc = MPI_Comm_delete_attr(dup, k);
            MPI_Error_class(rc, &cls);
            MT_CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_KEYVAL, "delete_attr on 0x%x: class %d",
                     k, cls);
            rc = MPI_Comm_free_keyval(&k);
            MPI_Error_class(rc, &cls);
            MT_CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_KEYVAL, "free_keyval on 0x%x: class %d",
                     kv[key], cls);
        }
        check_comm(dup, "dup after failed set/delete", nclusters);

        MT_MPI(MPI_Comm_free(&bycluster));
        MT_MPI(MPI_Comm_free(&split));
        MT_MPI(MPI_Comm_free(&dup));
    }
#else
    (void)argc;
    (void)argv;
#endif
    return mt_finalize();
}
