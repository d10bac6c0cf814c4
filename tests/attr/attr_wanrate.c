/* attr_wanrate: the WAN rate attributes (issue 12 item 1), as a GridMPI program uses them.
 *
 *   attr_wanrate EXPECTED_MAXRATE DIVISOR
 *
 * EXPECTED_MAXRATE: the MAXRATE attribute in Kbytes/s the job must report (-1: absent, the job
 * runs without WANMPI_WAN_RATE). DIVISOR n: the program then does what GridMPI's example does
 * -- get YAMPI_PSP_MAXRATE, get YAMPI_PSP_MATB, set *matb = *rate / n, put YAMPI_PSP_MATB --
 * and checks the new limit reads back, through both names and both put calls (MPI_Attr_put too).
 * It ends with that limit in force, so that a driver can read it back from the sockets
 * (WANMPI_WAN_STATS' pacing column: tests/wan/pacing_test.py).
 *
 * Checked besides: the default MATB is MAXRATE divided among the ranks of this host; the
 * attributes are the same on every communicator; a negative MATB is refused with MPI_ERR_ARG,
 * deleting either attribute or setting MAXRATE with MPI_ERR_KEYVAL; a put of 0 restores the
 * default. Some WAN traffic flows (a ring of 1 MiB messages) while the limit is set.
 *
 * Under an MPI without the attributes (no YAMPI_PSP_MAXRATE in mpi.h) it only says No Errors. */
#include <stdlib.h>
#include <string.h>

#include "mptest.h"

#ifdef YAMPI_PSP_MAXRATE
static int get(MPI_Comm comm, int key, int *flag)
{
    int *v = NULL;
    MT_MPI(MPI_Comm_get_attr(comm, key, &v, flag));
    return *flag && v ? *v : -1;
}

static int err_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}
#endif

int main(int argc, char **argv)
{
    mt_init(&argc, &argv);
#ifdef YAMPI_PSP_MAXRATE
    {
        const int want_rate = argc > 1 ? atoi(argv[1]) : -1;
        const int n = argc > 2 ? atoi(argv[2]) : 4;
        int flag = -1, flag2 = -1, nlocal = 1, *rate = NULL, *matb = NULL, v, rc;
        MPI_Comm shared, dup;

        MT_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                   &shared));
        MT_MPI(MPI_Comm_size(shared, &nlocal));
        MT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
        MT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

        /* GridMPI's example, unchanged. */
        MT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, YAMPI_PSP_MAXRATE, &rate, &flag));
        MT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, YAMPI_PSP_MATB, &matb, &flag2));
        if (want_rate < 0) {
            MT_CHECK(flag == 0, "MAXRATE present (%d) without WANMPI_WAN_RATE", flag ? *rate : 0);
        } else {
            MT_CHECK(flag == 1 && rate && *rate == want_rate, "MAXRATE flag %d value %d, want %d",
                     flag, flag && rate ? *rate : -1, want_rate);
            /* default: the host's share split among its ranks (1000-byte rounding) */
            MT_CHECK(flag2 == 1 && matb && abs(*matb - want_rate / nlocal) <= 1,
                     "default MATB flag %d value %d, want %d / %d ranks on this host", flag2,
                     flag2 && matb ? *matb : -1, want_rate, nlocal);
        }
        if (flag && flag2) {
            const int target = *rate / n;
            *matb = *rate / n;
            MT_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, YAMPI_PSP_MATB, matb));
            v = get(MPI_COMM_WORLD, WANMPI_MATB, &flag);
            MT_CHECK(flag && v == target, "MATB after put %d, want %d", v, target);
            v = get(dup, YAMPI_PSP_MATB, &flag);  /* the rank's limit, whatever the comm */
            MT_CHECK(flag && v == target, "MATB on a dup %d, want %d", v, target);

            /* MPI-1 put, then 0 = back to the default, then the target again */
            v = target / 2 + 1;
            MT_MPI(MPI_Attr_put(MPI_COMM_WORLD, WANMPI_MATB, &v));
            MT_CHECK(get(MPI_COMM_WORLD, WANMPI_MATB, &flag) == target / 2 + 1,
                     "MATB after MPI_Attr_put");
            v = 0;
            MT_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, WANMPI_MATB, &v));
            v = get(MPI_COMM_WORLD, WANMPI_MATB, &flag);
            MT_CHECK(abs(v - want_rate / nlocal) <= 1, "MATB after a put of 0: %d, want %d", v,
                     want_rate / nlocal);

            /* bad input */
            v = -5;
            rc = MPI_Comm_set_attr(MPI_COMM_WORLD, WANMPI_MATB, &v);
            MT_CHECK(err_class(rc) == MPI_ERR_ARG, "negative MATB: class %d", err_class(rc));
            rc = MPI_Comm_set_attr(MPI_COMM_WORLD, WANMPI_MAXRATE, &v);
            MT_CHECK(err_class(rc) == MPI_ERR_KEYVAL, "set MAXRATE: class %d", err_class(rc));
            rc = MPI_Comm_delete_attr(MPI_COMM_WORLD, WANMPI_MATB);
            MT_CHECK(err_class(rc) == MPI_ERR_KEYVAL, "delete MATB: class %d", err_class(rc));

            v = target;
            MT_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, YAMPI_PSP_MATB, &v));
        }

        /* traffic under the limit: a ring of 1 MiB messages, checked */
        {
            const int len = 1 << 20;
            char *out = malloc(len), *in = malloc(len);
            int i, bad = 0;
            for (i = 0; i < len; ++i) out[i] = (char)(i * 7 + mt_rank);
            MT_MPI(MPI_Sendrecv(out, len, MPI_CHAR, (mt_rank + 1) % mt_size, 5, in, len, MPI_CHAR,
                                (mt_rank + mt_size - 1) % mt_size, 5, MPI_COMM_WORLD,
                                MPI_STATUS_IGNORE));
            for (i = 0; i < len; ++i)
                bad += in[i] != (char)(i * 7 + (mt_rank + mt_size - 1) % mt_size);
            MT_CHECK(bad == 0, "%d bytes wrong in the ring", bad);
            free(out);
            free(in);
        }
        MT_MPI(MPI_Comm_free(&dup));
        MT_MPI(MPI_Comm_free(&shared));
    }
#else
    (void)argc;
    (void)argv;
#endif
    return mt_finalize();
}
