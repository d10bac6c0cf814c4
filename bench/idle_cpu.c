/* idle_cpu: CPU used by ranks that wait in MPI_Recv. Every rank but 0 posts a blocking MPI_Recv
 * from rank 0; rank 0 sleeps SECONDS (default 3) outside MPI, then sends to each. Each waiting
 * rank measures its own process CPU time (getrusage, user + system, all threads, so progress
 * threads count too) across the MPI_Recv and reports it to rank 0.
 *   idle_cpu [SECONDS]
 * Output from rank 0: "idle_cpu <waiting ranks> <seconds> <max_percent> <mean_percent>",
 * percent of one core. */
#include <mpi.h>

#include "bench_common.h"

#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
    int rank, nranks, i;
    double secs = argc > 1 ? atof(argv[1]) : 3.0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "idle_cpu: needs at least 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    /* Connections up and everyone ready before the measured wait. */
    if (rank == 0) {
        for (i = 1; i < nranks; i++)
            MPI_Recv(NULL, 0, MPI_BYTE, i, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else
        MPI_Send(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);

    if (rank == 0) {
        struct timespec ts;
        double maxp = 0, sum = 0, p;
        ts.tv_sec = (time_t)secs;
        ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
        nanosleep(&ts, NULL);
        for (i = 1; i < nranks; i++)
            MPI_Send(NULL, 0, MPI_BYTE, i, 2, MPI_COMM_WORLD);
        for (i = 1; i < nranks; i++) {
            MPI_Recv(&p, 1, MPI_DOUBLE, i, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            sum += p;
            if (p > maxp)
                maxp = p;
        }
        printf("# idle_cpu: waiting_ranks seconds max_percent mean_percent\n"
               "idle_cpu %d %.1f %.2f %.2f\n",
               nranks - 1, secs, maxp, sum / (nranks - 1));
    } else {
        double c0 = cpu_seconds(), w0 = MPI_Wtime(), p;
        MPI_Recv(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        p = (cpu_seconds() - c0) / (MPI_Wtime() - w0) * 100.0;
        MPI_Send(&p, 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
