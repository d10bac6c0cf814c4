/* MPI_Comm_create from groups (subset, reversed order, empty, disjoint groups given by
 * different processes as MPI-2.2 allows) and MPI_Comm_create_group (only the members call, tags
 * keep concurrent creations apart), checked by traffic against the groups computed here. */
#include "commtest.h"

static void check_result(MPI_Comm c, const int *world, int n, int member, const char *what)
{
    if (!member) {
        MT_CHECK(c == MPI_COMM_NULL, "%s: non-member got a communicator", what);
        return;
    }
    ct_check_comm(c, world, n, what);
    if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    MPI_Group wg, g;
    MPI_Comm c;
    int i, n, *ranks, *world;
    mt_init(&argc, &argv);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    ranks = (int *)mt_malloc(sizeof(int) * (size_t)mt_size);
    world = (int *)mt_malloc(sizeof(int) * (size_t)mt_size);

    /* Even ranks in reverse order. */
    n = 0;
    for (i = mt_size - 1; i >= 0; i--)
        if (i % 2 == 0)
            ranks[n++] = i;
    MPI_Group_incl(wg, n, ranks, &g);
    MPI_Comm_create(MPI_COMM_WORLD, g, &c);
    check_result(c, ranks, n, mt_rank % 2 == 0, "create: even ranks reversed");
    MPI_Group_free(&g);

    /* The whole group, and the empty group. */
    MPI_Comm_create(MPI_COMM_WORLD, wg, &c);
    for (i = 0; i < mt_size; i++)
        world[i] = i;
    check_result(c, world, mt_size, 1, "create: whole group");
    MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &c);
    MT_CHECK(c == MPI_COMM_NULL, "create from MPI_GROUP_EMPTY gave a communicator");

    /* Disjoint groups: each process passes the group of its own third. */
    {
        int third = mt_rank % 3;
        n = 0;
        for (i = 0; i < mt_size; i++)
            if (i % 3 == third)
                ranks[n++] = i;
        MPI_Group_incl(wg, n, ranks, &g);
        MPI_Comm_create(MPI_COMM_WORLD, g, &c);
        check_result(c, ranks, n, 1, "create: disjoint groups");
        MPI_Group_free(&g);
    }

    /* Create from a derived communicator (parent is not MPI_COMM_WORLD). */
    {
        MPI_Comm rev;
        MPI_Group rg;
        int r;
        MPI_Comm_split(MPI_COMM_WORLD, 0, -mt_rank, &rev);
        MPI_Comm_group(rev, &rg);
        /* first half of rev's ranks */
        n = (mt_size + 1) / 2;
        for (i = 0; i < n; i++)
            ranks[i] = i;
        MPI_Group_incl(rg, n, ranks, &g);
        MPI_Comm_create(rev, g, &c);
        MPI_Comm_rank(rev, &r);
        for (i = 0; i < n; i++)
            world[i] = mt_size - 1 - i;
        check_result(c, world, n, r < n, "create from a reversed communicator");
        MPI_Group_free(&g);
        MPI_Group_free(&rg);
        MPI_Comm_free(&rev);
    }

    /* create_group: odd and even ranks at the same time with different tags; then the
     * members of each in reverse order, with the same tag (sequential). */
    {
        int parity = mt_rank % 2, rep;
        for (rep = 0; rep < 3; rep++) {
            n = 0;
            if (rep == 1) {
                for (i = mt_size - 1; i >= 0; i--)
                    if (i % 2 == parity)
                        ranks[n++] = i;
            } else {
                for (i = 0; i < mt_size; i++)
                    if (i % 2 == parity)
                        ranks[n++] = i;
            }
            MPI_Group_incl(wg, n, ranks, &g);
            MPI_Comm_create_group(MPI_COMM_WORLD, g, rep == 2 ? 7 : parity, &c);
            check_result(c, ranks, n, 1, "create_group");
            MPI_Group_free(&g);
        }
        /* A group of one. */
        MPI_Group_incl(wg, 1, &mt_rank, &g);
        MPI_Comm_create_group(MPI_COMM_WORLD, g, 99, &c);
        check_result(c, &mt_rank, 1, 1, "create_group of self");
        MPI_Group_free(&g);
    }
    MPI_Group_free(&wg);
    free(ranks);
    free(world);
    return mt_finalize();
}
