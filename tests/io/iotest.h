/* iotest.h: helpers shared by the tests/io programs (on top of tests/mp/mptest.h).
 *
 * Every test file lives under /tmp with rank 0's pid in its name, so the shm and tcp variants of
 * a test may run at the same time. POSIX calls (pread, stat) are used only to check what the MPI
 * library put on disk: the expected bytes are computed by the test itself, never by MPI-IO. */
#ifndef IOTEST_H
#define IOTEST_H

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mptest.h"

/* A file name unique to this job: /tmp/wanmpi-io-<pid of rank 0>-<tag>. */
static MT_UNUSED void io_path(char *path, size_t n, const char *tag)
{
    if (mt_rank == 0)
        snprintf(path, n, "%s/wanmpi-io-%d-%s", getenv("IOTEST_DIR") ? getenv("IOTEST_DIR")
                                                                     : "/tmp", (int)getpid(), tag);
    MPI_Bcast(path, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* A new, empty file at `path` opened MPI_MODE_RDWR | MPI_MODE_CREATE on MPI_COMM_WORLD. */
static MT_UNUSED int io_open_fresh(const char *path, MPI_File *fh)
{
    if (mt_rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL); /* may not exist */
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                         fh);
}

static MT_UNUSED int io_class(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

/* The call must fail with error class `want` (the file handlers return: MPI_ERRORS_RETURN). */
#define IO_EXPECT_CLASS(call, want)                                                                \
    do {                                                                                           \
        int io_rc_ = (call);                                                                       \
        MT_CHECK(io_rc_ != MPI_SUCCESS && io_class(io_rc_) == (want),                              \
                 "%s: got class %d, want %d (%s)", #call,                                          \
                 io_rc_ == MPI_SUCCESS ? 0 : io_class(io_rc_), (want), #want);                     \
    } while (0)

/* The whole file as bytes (rank-local POSIX read); *len = its size. Caller frees. */
static MT_UNUSED unsigned char *io_slurp(const char *path, long *len)
{
    struct stat sb;
    unsigned char *b;
    int fd = open(path, O_RDONLY);
    *len = -1;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    b = (unsigned char *)malloc((size_t)sb.st_size + 1);
    if (pread(fd, b, (size_t)sb.st_size, 0) != (ssize_t)sb.st_size) {
        free(b);
        close(fd);
        return NULL;
    }
    close(fd);
    *len = (long)sb.st_size;
    return b;
}

/* Compare the file with the expected image byte by byte; reports the first difference. */
static MT_UNUSED void io_compare(const char *path, const unsigned char *want, long n,
                                 const char *what)
{
    long len = 0, i;
    unsigned char *got = io_slurp(path, &len);
    MT_CHECK(got != NULL, "%s: cannot read %s back", what, path);
    if (!got)
        return;
    MT_CHECK(len == n, "%s: file has %ld bytes, expected %ld", what, len, n);
    for (i = 0; i < len && i < n; i++)
        if (got[i] != want[i]) {
            MT_CHECK(0, "%s: byte %ld is 0x%02x, expected 0x%02x", what, i, got[i], want[i]);
            break;
        }
    free(got);
}

#endif
