/* tcp_pingpong: plain TCP ping-pong (no MPI), the reference for the tcp route's latency.
 * The process forks; the child connects to the parent over TCP (default 127.0.0.1, -h ADDR to
 * use another local address) with TCP_NODELAY, and echoes every message; the parent times each
 * round trip. Same sizes and iteration counts as bench/pingpong.c, same output:
 *   tcp_pingpong [-m MIN] [-M MAX] [-q] [-h ADDR]
 *   "<bytes> <median_us> <min_us> <iters>" (half round trip) */
#define _GNU_SOURCE
#include "bench_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void xfer(int fd, void *buf, size_t n, int send)
{
    unsigned char *p = (unsigned char *)buf;
    while (n > 0) {
        ssize_t k = send ? write(fd, p, n) : read(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            die(send ? "write" : "read");
        p += k;
        n -= (size_t)k;
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int main(int argc, char **argv)
{
    long min = 1, max = 16 << 20, size;
    int quick = 0, i, lfd, fd;
    const char *addr = "127.0.0.1";
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    unsigned char *buf;
    double *samples;
    pid_t child;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc)
            min = bench_parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-M") && i + 1 < argc)
            max = bench_parse_size(argv[++i]);
        else if (!strcmp(argv[i], "-h") && i + 1 < argc)
            addr = argv[++i];
        else if (!strcmp(argv[i], "-q"))
            quick = 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
        fprintf(stderr, "tcp_pingpong: bad address %s\n", addr);
        return 1;
    }
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 1) < 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0)
        die("listen");
    buf = (unsigned char *)bench_alloc((size_t)max);

    child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        /* echo side: receive a message of the announced size, send it back */
        close(lfd);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
            die("connect");
        tune(fd);
        for (;;) {
            long hdr[2]; /* size, round trips */
            size_t got = 0;
            while (got < sizeof hdr) {
                ssize_t k = read(fd, (char *)hdr + got, sizeof hdr - got);
                if (k <= 0)
                    _exit(0); /* parent closed: done */
                got += (size_t)k;
            }
            for (i = 0; i < hdr[1]; i++) {
                xfer(fd, buf, (size_t)hdr[0], 0);
                xfer(fd, buf, (size_t)hdr[0], 1);
            }
        }
    }
    fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        die("accept");
    close(lfd);
    tune(fd);
    samples = (double *)bench_alloc(sizeof(double) * 20000);
    printf("# tcp_pingpong (%s): half round trip, median of per-iteration samples\n"
           "# bytes median_us min_us iters\n",
           addr);
    for (size = min; size <= max; size *= 2) {
        int iters = size <= 4096 ? 10000 : size <= 65536 ? 2000 : size <= (1 << 20) ? 200 : 40;
        int warm = iters / 10 + 2, n = 0;
        long hdr[2];
        if (quick)
            iters = iters / 5 > 20 ? iters / 5 : 20;
        hdr[0] = size;
        hdr[1] = warm + iters;
        xfer(fd, hdr, sizeof hdr, 1);
        for (i = -warm; i < iters; i++) {
            double t0 = now();
            xfer(fd, buf, (size_t)size, 1);
            xfer(fd, buf, (size_t)size, 0);
            if (i >= 0)
                samples[n++] = (now() - t0) * 0.5e6;
        }
        {
            double med = bench_median(samples, n);
            printf("%ld %.3f %.3f %d\n", size, med, samples[0], n);
            fflush(stdout);
        }
    }
    close(fd);
    waitpid(child, NULL, 0);
    free(buf);
    free(samples);
    return 0;
}
