/* tcp_kfwd: an in-kernel TCP forwarder (sockhash + sk_skb verdict program), the experiment of
 * issue 11 (docs/design/relay-kernel-path.md): how much a hop costs when the kernel, not a
 * process, moves the bytes from one socket to the other. Companion of the 2-thread user-space
 * forwarder in bench/compare-relay.sh, set up the same way:
 *
 *   tcp_kfwd [-m verdict|parser] LISTEN_ADDR PORT TARGET_ADDR TARGET_PORT
 *       accepts one connection on LISTEN_ADDR:PORT, dials TARGET, then lets the kernel forward
 *       each socket's bytes to the other's egress until both sides have closed; exits 0.
 *   tcp_kfwd --selftest [-m MODE] [-M MiB]
 *       loopback, no namespaces: echo server, forwarder (a child process) and a client that
 *       checks every byte and both directions' EOF; then a client that aborts (RST), which the
 *       server must see as a reset; prints " No Errors" and exits 0, or says what went wrong
 *       and exits 1. Needs CAP_BPF + CAP_NET_ADMIN (root).
 *
 * No libbpf: the programs are BPF instructions written out below and loaded with bpf(2), so
 * nothing beyond the kernel headers of Debian 12 is needed (kernel >= 5.13 for -m verdict).
 *
 * How it works (the kernel's "sockmap" data path, net/core/skmsg.c):
 * - one BPF_MAP_TYPE_SOCKHASH keyed by a u64 socket cookie (SO_COOKIE): socket B is stored under
 *   the cookie of A and A under the cookie of B, so "my peer" is one lookup by my own cookie;
 * - the verdict program, run for every skb that reaches a socket of the map, redirects it to the
 *   egress of the socket stored under its own cookie (bpf_sk_redirect_hash, flags 0 = send) and
 *   returns SK_PASS. When there is no such socket it still returns SK_PASS, without a redirect:
 *   the bytes then go to the socket's own receive queue, where this program reads them and
 *   writes them on in user space (the fall-back path; counted, and 0 in a healthy run). TCP has
 *   already acknowledged those bytes, so dropping them (SK_DROP) would lose data silently;
 * - -m verdict (default): BPF_SK_SKB_VERDICT, no stream parser: every skb as it comes;
 *   -m parser: BPF_SK_SKB_STREAM_PARSER (a program returning skb->len: the whole skb is one
 *   message) + BPF_SK_SKB_STREAM_VERDICT: the strparser path the IMPI framing would need.
 * - bytes that reached a socket before it entered the map (a ping-pong's first ping, the IMPI
 *   packets a relay has read ahead) sit in its TCP receive queue: on 6.18 the insertion runs
 *   the verdict on them, in order (the --selftest's first byte waits 50 ms in the queue, and
 *   comes back through the kernel path, not through user space). Were that not so, a
 *   setsockopt(SO_RCVLOWAT) after the insertion, which calls tcp_data_ready(), should run the
 *   verdict (untested: not needed on 6.18).
 * - EOF: the kernel does not forward a FIN (the verdict drops the empty skb that carries it,
 *   see there). The sockets stay ordinary to poll(): a FIN on A gives EPOLLIN|EPOLLRDHUP
 *   (seen: events 0x2011 with EPOLLHUP once both ways are shut) and read() returns 0, so this
 *   program learns of it. It must not
 *   shutdown(B) at once: the verdict queues redirected skbs on B's psock and a kernel worker
 *   sends them (sk_psock_backlog), so some of A's bytes may not be in B's send queue yet. It
 *   waits until B's TCP byte counters (bytes acked + SIOCOUTQ) have grown by everything that A
 *   received (TCP_INFO tcpi_bytes_received, which counts the FIN as one) minus what went through
 *   user space, then shuts B down for writing. A reset or any other error on either socket
 *   (read() < 0: ECONNRESET, or EPIPE that the psock worker sets when a send fails) resets
 *   both (SO_LINGER 0), so that the far side does not take an abort for a clean end. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* not netinet/tcp.h: its tcp_info lacks the byte counters */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- BPF instructions (the encodings of linux/filter.h's macros) --------------------------- */
#define INSN(c, d, s, o, i)                                                                       \
    ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define MOV64_REG(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV64_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADD64_IMM(d, i) INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define LDX_MEM(sz, d, s, o) INSN(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define STX_MEM(sz, d, s, o) INSN(BPF_STX | BPF_MEM | (sz), d, s, o, 0)
#define CALL(f) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
/* 64-bit immediate load of a map: two instruction slots, the kernel puts the map's address */
#define LD_MAP_FD(d, fd)                                                                          \
    INSN(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd), INSN(0, 0, 0, 0, 0)
enum { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 };

static long sys_bpf(int cmd, union bpf_attr *a)
{
    return syscall(__NR_bpf, cmd, a, sizeof *a);
}

static void die(const char *what)
{
    fprintf(stderr, "tcp_kfwd: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int load_prog(const struct bpf_insn *insn, size_t n, const char *name)
{
    static char log[65536];
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_SK_SKB;
    a.insns = (uint64_t)(uintptr_t)insn;
    a.insn_cnt = (uint32_t)n;
    a.license = (uint64_t)(uintptr_t) "GPL"; /* the sockmap helpers are GPL-only */
    a.log_buf = (uint64_t)(uintptr_t)log;
    a.log_size = sizeof log;
    a.log_level = 1;
    snprintf(a.prog_name, sizeof a.prog_name, "%s", name);
    int fd = (int)sys_bpf(BPF_PROG_LOAD, &a);
    if (fd < 0) {
        fprintf(stderr, "tcp_kfwd: loading BPF program %s: %s\n%s\n", name, strerror(errno), log);
        exit(1);
    }
    return fd;
}

/* programs attach to the map: every socket put in it gets them */
static void attach(int map, int prog, enum bpf_attach_type type, const char *what)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.target_fd = (uint32_t)map;
    a.attach_bpf_fd = (uint32_t)prog;
    a.attach_type = type;
    if (sys_bpf(BPF_PROG_ATTACH, &a) < 0)
        die(what);
}

/* The sockhash and its programs; the sockets are added by kfwd_pair(). */
struct kfwd {
    int map, verdict, parser;
    const char *mode;
};

static void kfwd_setup(struct kfwd *k, const char *mode)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_type = BPF_MAP_TYPE_SOCKHASH;
    a.key_size = 8;   /* the socket cookie of the *other* socket of the pair */
    a.value_size = 4; /* a socket fd on update (the kernel keeps the socket) */
    a.max_entries = 2;
    k->map = (int)sys_bpf(BPF_MAP_CREATE, &a);
    if (k->map < 0)
        die("creating the sockhash (needs root: CAP_BPF + CAP_NET_ADMIN)");
    k->mode = mode;
    /* verdict: redirect to the egress of the socket stored under my own cookie; SK_PASS either
     * way (no redirect set = my own receive queue, for user space) */
    const struct bpf_insn verdict[] = {
        /* an empty skb (the FIN's, in verdict mode) is dropped: redirected, the psock worker
         * sends 0 bytes on the peer, takes that for a broken pipe and sets EPIPE on it; passed
         * while this socket's own egress backlog is not empty, it is queued behind it and
         * stalls it (seen on 6.18: the rest of the other direction never left). Dropping it
         * loses nothing: tcp_fin() has already marked the socket RCV_SHUTDOWN, which is what
         * poll() and read() report. */
        LDX_MEM(BPF_W, R0, R1, offsetof(struct __sk_buff, len)),
        INSN(BPF_JMP | BPF_JNE | BPF_K, R0, 0, 2, 0),
        MOV64_IMM(R0, SK_DROP),
        EXIT(),
        MOV64_REG(R6, R1),
        CALL(BPF_FUNC_get_socket_cookie),   /* r0 = cookie of the skb's socket */
        STX_MEM(BPF_DW, R10, R0, -8),
        MOV64_REG(R1, R6),
        LD_MAP_FD(R2, k->map),
        MOV64_REG(R3, R10),
        ADD64_IMM(R3, -8),
        MOV64_IMM(R4, 0),                   /* 0: the peer's egress (BPF_F_INGRESS: its rx) */
        CALL(BPF_FUNC_sk_redirect_hash),
        MOV64_IMM(R0, SK_PASS),
        EXIT(),
    };
    k->verdict = load_prog(verdict, sizeof verdict / sizeof *verdict, "kfwd_verdict");
    k->parser = -1;
    enum bpf_attach_type vt = BPF_SK_SKB_VERDICT;
    if (!strcmp(mode, "parser")) {
        const struct bpf_insn parser[] = {
            LDX_MEM(BPF_W, R0, R1, offsetof(struct __sk_buff, len)),
            EXIT(),
        };
        k->parser = load_prog(parser, 2, "kfwd_parser");
        attach(k->map, k->parser, BPF_SK_SKB_STREAM_PARSER, "attaching the stream parser");
        vt = BPF_SK_SKB_STREAM_VERDICT;
    } else if (strcmp(mode, "verdict")) {
        fprintf(stderr, "tcp_kfwd: unknown mode %s (verdict or parser)\n", mode);
        exit(2);
    }
    attach(k->map, k->verdict, vt, "attaching the verdict program");
}

static uint64_t cookie_of(int fd)
{
    uint64_t c = 0;
    socklen_t l = sizeof c;
    if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &l) < 0)
        die("SO_COOKIE");
    return c;
}

static void map_put(int map, uint64_t key, int fd)
{
    union bpf_attr a;
    uint32_t v = (uint32_t)fd;
    memset(&a, 0, sizeof a);
    a.map_fd = (uint32_t)map;
    a.key = (uint64_t)(uintptr_t)&key;
    a.value = (uint64_t)(uintptr_t)&v;
    a.flags = BPF_ANY;
    if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a) < 0)
        die("adding a socket to the sockhash");
}

/* bytes the kernel has taken into fd's send path: acknowledged + still in the write queue */
static uint64_t sent_in(int fd)
{
    struct tcp_info ti;
    socklen_t l = sizeof ti;
    int outq = 0;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) < 0 || ioctl(fd, SIOCOUTQ, &outq) < 0)
        return UINT64_MAX;
    return ti.tcpi_bytes_acked + (uint64_t)outq;
}

static uint64_t received_on(int fd)
{
    struct tcp_info ti;
    socklen_t l = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) < 0)
        return 0;
    return ti.tcpi_bytes_received;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Forwards between s[0] and s[1] until both directions have ended. Prints one line of what it
 * saw to stderr (verbose) and returns 0 on clean EOF both ways, 1 on a reset or error. */
static int kfwd_pair(struct kfwd *k, int s[2], int verbose)
{
    uint64_t base_rx[2], base_tx[2], user[2] = {0, 0};
    int one = 1, done[2] = {0, 0}, err = 0;
    double t0 = now_s(), eof_at[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
        setsockopt(s[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        /* the counters before the hand-over: bytes sent so far (the SYN may count as one), and
         * bytes received minus those still queued (the verdict will see these) */
        int inq = 0;
        ioctl(s[i], SIOCINQ, &inq);
        base_rx[i] = received_on(s[i]) - (uint64_t)inq;
        base_tx[i] = sent_in(s[i]);
    }
    /* A under B's cookie and B under A's: "my peer" = the entry under my own cookie. Both
     * entries before either kick, so no skb finds its peer missing. */
    map_put(k->map, cookie_of(s[1]), s[0]);
    map_put(k->map, cookie_of(s[0]), s[1]);
    int ep = epoll_create1(0);
    for (int i = 0; i < 2; ++i) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, s[i], &ev);
    }
    static char buf[65536];
    while (!(done[0] && done[1]) && !err) {
        struct epoll_event ev[2];
        int n = epoll_wait(ep, ev, 2, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("epoll_wait");
        for (int e = 0; e < n; ++e) {
            int i = (int)ev[e].data.u32, o = 1 - i;
            if (done[i])
                continue;
            if (verbose > 1)
                fprintf(stderr, "tcp_kfwd: socket %d events 0x%x\n", i, ev[e].events);
            ssize_t r = recv(s[i], buf, sizeof buf, MSG_DONTWAIT);
            if (r > 0) { /* the fall-back path: no peer in the map when these bytes came */
                user[i] += (uint64_t)r;
                if (write_all(s[o], buf, (size_t)r) < 0)
                    err = 1;
                continue;
            }
            if (r < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (r < 0) {
                if (verbose)
                    fprintf(stderr, "tcp_kfwd: socket %d: %s\n", i, strerror(errno));
                err = 1;
                break;
            }
            /* EOF on i: wait until the kernel worker has put all of i's bytes into o's send
             * queue, then pass the FIN on */
            eof_at[i] = now_s() - t0;
            uint64_t want = received_on(s[i]) - base_rx[i] - user[i] - 1; /* - the FIN */
            double until = now_s() + 10;
            while (sent_in(s[o]) - base_tx[o] - user[i] < want && now_s() < until)
                usleep(100);
            if (sent_in(s[o]) - base_tx[o] - user[i] < want) {
                fprintf(stderr, "tcp_kfwd: %llu of socket %d's bytes never reached socket %d\n",
                        (unsigned long long)(want - (sent_in(s[o]) - base_tx[o] - user[i])), i,
                        o);
                err = 1;
            }
            if (verbose > 1)
                fprintf(stderr, "tcp_kfwd: EOF on %d: want %llu, sent_in %llu base %llu\n", i,
                        (unsigned long long)want, (unsigned long long)sent_in(s[o]),
                        (unsigned long long)base_tx[o]);
            shutdown(s[o], SHUT_WR);
            done[i] = 1;
            struct epoll_event none = {0};
            epoll_ctl(ep, EPOLL_CTL_DEL, s[i], &none);
        }
    }
    if (verbose)
        fprintf(stderr,
                "tcp_kfwd: %s mode: %s; in kernel %llu + %llu bytes, through user space %llu + %llu;"
                " EOF seen at %.3f / %.3f s\n",
                k->mode, err ? "ended by an error" : "both directions ended cleanly",
                (unsigned long long)(received_on(s[0]) - base_rx[0] - user[0] - (uint64_t)done[0]),
                (unsigned long long)(received_on(s[1]) - base_rx[1] - user[1] - (uint64_t)done[1]),
                (unsigned long long)user[0], (unsigned long long)user[1], eof_at[0], eof_at[1]);
    close(ep);
    if (err) { /* pass the abort on as an abort (RST), not as a clean end (FIN) */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        for (int i = 0; i < 2; ++i)
            setsockopt(s[i], SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    close(s[0]);
    close(s[1]);
    return err;
}

static int listen_on(const char *addr, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
    if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
        fprintf(stderr, "tcp_kfwd: bad address %s\n", addr);
        exit(2);
    }
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1))
        die("listen");
    return l;
}

static int dial(const char *addr, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
        fprintf(stderr, "tcp_kfwd: bad address %s\n", addr);
        exit(2);
    }
    if (connect(fd, (struct sockaddr *)&a, sizeof a))
        die("connect");
    return fd;
}

/* ---- --selftest ------------------------------------------------------------------------------ */
/* the stream's byte at offset i: not periodic within any power of two, so a lost, duplicated
 * or reordered chunk shows */
static unsigned char pattern(uint64_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13 ^ (i >> 17));
}

static int echo_fd;
static void *echo_server(void *arg)
{
    (void)arg;
    static char b[65536];
    ssize_t n;
    while ((n = read(echo_fd, b, sizeof b)) > 0)
        if (write_all(echo_fd, b, (size_t)n) < 0)
            break;
    shutdown(echo_fd, SHUT_WR); /* EOF seen: pass it back */
    return NULL;
}

struct reader {
    int fd;
    uint64_t got, bad_at;
    int eof;
};
static void *read_back(void *arg)
{
    struct reader *r = arg;
    static unsigned char b[65536];
    ssize_t n;
    r->bad_at = UINT64_MAX;
    while ((n = read(r->fd, b, sizeof b)) > 0)
        for (ssize_t i = 0; i < n; ++i, ++r->got)
            if (b[i] != pattern(r->got) && r->bad_at == UINT64_MAX)
                r->bad_at = r->got;
    r->eof = n == 0;
    return NULL;
}

static pid_t forwarder(const char *mode, int lf, int sport)
{
    pid_t fw = fork();
    if (fw == 0) { /* the forwarder, as run for real; it dials the server after a delay so
                    * that the client's first bytes wait in the receive queue */
        struct kfwd k;
        kfwd_setup(&k, mode);
        int s[2];
        s[0] = accept(lf, NULL, NULL);
        usleep(50000);
        s[1] = dial("127.0.0.1", sport);
        _exit(kfwd_pair(&k, s, getenv("TCP_KFWD_VERBOSE") ? 2 : 1));
    }
    close(lf);
    return fw;
}

static int port_of(int fd)
{
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    return ntohs(a.sin_port);
}

/* The client aborts (SO_LINGER 0: RST) an idle pair: the forwarder must notice, end with an
 * error and reset the server's side too. Returns 0 if so. */
static int selftest_reset(const char *mode, int ls)
{
    int lf = listen_on("127.0.0.1", 0), fport = port_of(lf);
    pid_t fw = forwarder(mode, lf, port_of(ls));
    int c = dial("127.0.0.1", fport), srv = accept(ls, NULL, NULL), st = 0, fail = 0;
    char x = 'x';
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    if (write_all(c, &x, 1) < 0 || read(srv, &x, 1) != 1) {
        fprintf(stderr, "tcp_kfwd: selftest (reset): the byte before the reset did not pass\n");
        fail = 1;
    }
    setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(c);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(srv, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = read(srv, &x, 1);
    if (!(n < 0 && errno == ECONNRESET)) {
        fprintf(stderr, "tcp_kfwd: selftest (reset): the server's read gave %zd (%s), not a reset\n",
                n, n < 0 ? strerror(errno) : "no error");
        fail = 1;
    }
    double until = now_s() + 5;
    while (waitpid(fw, &st, WNOHANG) == 0 && now_s() < until)
        usleep(1000);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 1) {
        fprintf(stderr, "tcp_kfwd: selftest (reset): the forwarder did not end with an error "
                        "(status 0x%x)\n", st);
        kill(fw, SIGKILL);
        waitpid(fw, &st, 0);
        fail = 1;
    }
    close(srv);
    return fail;
}

static int selftest(const char *mode, long mib)
{
    if (geteuid() != 0) {
        printf("tcp_kfwd: selftest skipped: needs root (BPF maps and programs)\n");
        return 77; /* ctest's SKIP_RETURN_CODE */
    }
    int ls = listen_on("127.0.0.1", 0), lf = listen_on("127.0.0.1", 0), fport = port_of(lf);
    pid_t fw = forwarder(mode, lf, port_of(ls));
    int c = dial("127.0.0.1", fport), one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* the first chunk is a ping, sent while the forwarder sleeps: it waits in the accepted
     * socket's receive queue until the hand-over, and its echo must come back before more is
     * sent (a forwarder that left queued bytes behind hangs here, bounded by the wait below) */
    static unsigned char b[300000];
    b[0] = pattern(0);
    write_all(c, (char *)b, 1);
    echo_fd = accept(ls, NULL, NULL);
    pthread_t es, rt;
    pthread_create(&es, NULL, echo_server, NULL);
    struct reader r = {.fd = c};
    pthread_create(&rt, NULL, read_back, &r);
    uint64_t total = (uint64_t)mib << 20, off = 1;
    unsigned seed = 12345;
    alarm(60);
    double t = now_s();
    while (r.got < 1 && now_s() - t < 5)
        usleep(1000);
    if (r.got < 1) {
        fprintf(stderr, "tcp_kfwd: selftest: the first byte (queued before the sockets entered "
                        "the map) never came back\n");
        kill(fw, SIGKILL);
        return 1;
    }
    t = now_s();
    while (off < total) { /* chunks of 1 byte .. 300 kB */
        seed = seed * 1103515245u + 12345u;
        size_t n = 1 + (seed >> 8) % sizeof b;
        if (n > total - off)
            n = (size_t)(total - off);
        for (size_t i = 0; i < n; ++i)
            b[i] = pattern(off + i);
        if (write_all(c, (char *)b, n) < 0)
            die("selftest write");
        off += n;
    }
    shutdown(c, SHUT_WR); /* client EOF -> forwarder -> server EOF -> server shutdown -> back */
    pthread_join(rt, NULL);
    double dt = now_s() - t;
    pthread_join(es, NULL);
    int st = 0;
    waitpid(fw, &st, 0);
    int fail = 0;
    if (r.got != total) {
        fprintf(stderr, "tcp_kfwd: selftest: %llu of %llu bytes came back\n",
                (unsigned long long)r.got, (unsigned long long)total);
        fail = 1;
    }
    if (r.bad_at != UINT64_MAX) {
        fprintf(stderr, "tcp_kfwd: selftest: byte %llu came back wrong\n",
                (unsigned long long)r.bad_at);
        fail = 1;
    }
    if (!r.eof) {
        fprintf(stderr, "tcp_kfwd: selftest: the client saw no EOF\n");
        fail = 1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "tcp_kfwd: selftest: the forwarder failed (status 0x%x)\n", st);
        fail = 1;
    }
    if (fail || selftest_reset(mode, ls))
        return 1;
    printf("tcp_kfwd: selftest (%s): %ld MiB each way intact, EOF both ways, %.0f MB/s echo; "
           "a reset passed on as a reset\n", mode, mib, 2.0 * (double)total / dt / 1e6);
    printf(" No Errors\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = "verdict";
    int self = 0, verbose = 0;
    long mib = 64;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; ++i) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc)
            mode = argv[++i];
        else if (!strcmp(argv[i], "-M") && i + 1 < argc)
            mib = atol(argv[++i]);
        else if (!strcmp(argv[i], "-v"))
            ++verbose;
        else if (!strcmp(argv[i], "--selftest"))
            self = 1;
        else
            break;
    }
    signal(SIGPIPE, SIG_IGN);
    if (self)
        return mib > 0 ? selftest(mode, mib) : 2;
    if (argc - i != 4) {
        fprintf(stderr, "usage: tcp_kfwd [-m verdict|parser] [-v] LISTEN_ADDR PORT TARGET_ADDR "
                        "TARGET_PORT | tcp_kfwd --selftest [-m MODE] [-M MiB]\n");
        return 2;
    }
    struct kfwd k;
    kfwd_setup(&k, mode);
    int l = listen_on(argv[i], atoi(argv[i + 1])), s[2];
    s[0] = accept(l, NULL, NULL);
    if (s[0] < 0)
        die("accept");
    close(l);
    s[1] = dial(argv[i + 2], atoi(argv[i + 3]));
    return kfwd_pair(&k, s, verbose + 1);
}
