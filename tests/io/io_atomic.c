/* io_atomic: atomic mode (MPI 3.1 13.6.1). Rank 0 and the other even ranks rewrite the same
 * region over and over, each time with one value throughout; the odd ranks read the region
 * meanwhile. The region is seen through a view of NB separate blocks, so one access is many
 * file-system calls: without atomicity a reader can see a mix of two writes. In atomic mode
 * every read must find the region holding one single value (the initial one or one write's).
 * Also checks MPI_File_get_atomicity and that the final content is one writer's. */
#include "iotest.h"

#define NB 64    /* blocks per access */
#define BL 256   /* ints per block */
#define ITER 40

static int uniform(const int *v, int n)
{
    int i;
    for (i = 1; i < n; i++)
        if (v[i] != v[0])
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    char path[256];
    MPI_File fh;
    MPI_Datatype ft;
    MPI_Status st;
    int *buf = malloc(NB * BL * sizeof(int)), flag, it, i, bad = 0, allbad;

    mt_init(&argc, &argv);
    io_path(path, sizeof path, "atomic");
    MT_MPI(io_open_fresh(path, &fh));
    MT_MPI(MPI_File_get_atomicity(fh, &flag));
    MT_CHECK(flag == 0, "atomicity is on by default");
    MT_MPI(MPI_File_set_atomicity(fh, 1));
    MT_MPI(MPI_File_get_atomicity(fh, &flag));
    MT_CHECK(flag == 1, "atomicity not set");
    /* blocks of BL ints, BL ints apart */
    MPI_Type_vector(NB, BL, 2 * BL, MPI_INT, &ft);
    MPI_Type_commit(&ft);
    MT_MPI(MPI_File_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL));
    if (mt_rank == 0) {
        for (i = 0; i < NB * BL; i++)
            buf[i] = -1;
        MT_MPI(MPI_File_write_at(fh, 0, buf, NB * BL, MPI_INT, &st));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (it = 0; it < ITER; it++) {
        if (mt_rank % 2 == 0) {
            for (i = 0; i < NB * BL; i++)
                buf[i] = mt_rank * 1000 + it;
            MT_MPI(MPI_File_write_at(fh, 0, buf, NB * BL, MPI_INT, &st));
        } else {
            MT_MPI(MPI_File_read_at(fh, 0, buf, NB * BL, MPI_INT, &st));
            if (!uniform(buf, NB * BL)) {
                bad++;
                if (bad == 1)
                    MT_CHECK(0, "iteration %d: a read saw a mix of writes (first %d, ...)", it,
                             buf[0]);
            }
        }
    }
    MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MT_MPI(MPI_File_sync(fh));
    MT_MPI(MPI_File_read_at_all(fh, 0, buf, NB * BL, MPI_INT, &st));
    MT_CHECK(uniform(buf, NB * BL) && buf[0] % 1000 == ITER - 1 && (buf[0] / 1000) % 2 == 0,
             "final content is not one writer's last write (%d)", buf[0]);
    MT_MPI(MPI_File_close(&fh));
    MPI_Type_free(&ft);
    free(buf);
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    return mt_finalize();
}
