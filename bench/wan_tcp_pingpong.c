/* wan_tcp_pingpong: plain TCP ping-pong between two hosts (two wanemu namespaces), the floor an
 * MPI ping-pong across the same link is compared with (bench/compare-wan.sh).
 *   wan_tcp_pingpong server [-p PORT]                 echoes; exits after one client
 *   wan_tcp_pingpong client HOST[:PORT] [-n ITERS] [-s BYTES] [-t CONNECT_TIMEOUT_S] [-w WARMUP]
 * TCP_NODELAY on both sides; the client retries the connect until the server listens, times
 * every round trip after WARMUP (default 5) warm-up ones and prints
 *   "tcp_lat_us <median half round trip> us  # <bytes> B, median of <iters>". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int xfer(int fd, void *buf, size_t n, int send)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t k = send ? write(fd, p, n) : read(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int one = 1, port = 5599, iters = 200, warmup = 5, i;
    long size = 1;
    double timeout = 10;
    char host[256] = "";
    if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
        fprintf(stderr, "usage: wan_tcp_pingpong server [-p PORT] | client HOST[:PORT] [-n ITERS]"
                        " [-s BYTES] [-t TIMEOUT_S] [-w WARMUP]\n");
        return 2;
    }
    i = 2;
    if (!strcmp(argv[1], "client")) {
        char *c;
        if (argc < 3)
            return 2;
        snprintf(host, sizeof host, "%s", argv[2]);
        if ((c = strrchr(host, ':')) != NULL) {
            *c = 0;
            port = atoi(c + 1);
        }
        i = 3;
    }
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "-p") && i + 1 < argc)
            port = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            size = atol(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc)
            timeout = atof(argv[++i]);
        else if (!strcmp(argv[i], "-w") && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else
            return 2;
    }
    if (iters < 1 || size < 1 || warmup < 0)
        return 2;
    unsigned char *buf = calloc((size_t)size, 1);
    if (!strcmp(argv[1], "server")) {
        struct sockaddr_in sa = {0};
        int lfd = socket(AF_INET, SOCK_STREAM, 0), fd;
        if (lfd < 0)
            die("socket");
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)port);
        if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 1) < 0)
            die("bind/listen");
        printf("listening on port %d\n", port);
        fflush(stdout);
        fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            die("accept");
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        /* the client tells the size first */
        uint32_t n;
        if (xfer(fd, &n, 4, 0) < 0)
            return 1;
        buf = realloc(buf, n ? n : 1);
        while (xfer(fd, buf, n, 0) == 0 && xfer(fd, buf, n, 1) == 0) {
        }
        return 0;
    }
    {
        struct addrinfo hints = {0}, *ai;
        char ps[16];
        int fd = -1;
        double end = now_s() + timeout, *v;
        uint32_t n = (uint32_t)size;
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        snprintf(ps, sizeof ps, "%d", port);
        if (getaddrinfo(host, ps, &hints, &ai) != 0) {
            fprintf(stderr, "wan_tcp_pingpong: cannot resolve %s\n", host);
            return 1;
        }
        while (now_s() < end) {
            fd = socket(AF_INET, SOCK_STREAM, 0);
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
                break;
            close(fd);
            fd = -1;
            usleep(20000); /* the server is starting: retry */
        }
        if (fd < 0)
            die("connect");
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (xfer(fd, &n, 4, 1) < 0)
            die("write");
        v = malloc(sizeof(double) * (size_t)iters);
        for (i = -warmup; i < iters; i++) {
            double t = now_s();
            if (xfer(fd, buf, (size_t)size, 1) < 0 || xfer(fd, buf, (size_t)size, 0) < 0)
                die("ping-pong");
            if (i >= 0)
                v[i] = (now_s() - t) / 2;
        }
        qsort(v, (size_t)iters, sizeof *v, cmp_double);
        printf("tcp_lat_us %.1f us  # %ld B, median of %d\n", v[iters / 2] * 1e6, size, iters);
        close(fd);
    }
    return 0;
}
