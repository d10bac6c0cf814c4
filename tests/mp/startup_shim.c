/* startup_shim: an LD_PRELOAD library that makes start-up races of the shm transport
 * deterministic (issue 16, point 2), without a hook in the library. It wraps libc's syscall() and
 * acts on pidfd_open(2) of *another* process, which is how a rank starts to attach a local peer's
 * shared memory (after the bootstrap fence that published the peer's address):
 *
 *   WANMPI_TEST_SHIM_WAIT_RANK=r  rank r (PMI_RANK) waits, after opening the peer's pidfd, until
 *                                 that peer has exited (at most 2 s), then goes on attaching. It
 *                                 also blocks SIGTERM, as if mpirun's teardown signal were late
 *                                 (a loaded machine): so whatever it concludes, it gets to print.
 *   WANMPI_TEST_SHIM_DIE_RANK=r   rank r kills itself (SIGKILL) at that point: a rank that dies
 *                                 during start-up, after its address was published.
 *
 * Without the start-up being synchronized, "wait" plus a peer that aborts right after MPI_Init is
 * exactly the race seen on loaded machines: the waiting rank then fails to take the fd of a peer
 * that is gone. With it, the peer cannot leave MPI_Init before the waiting rank has attached, the
 * wait ends at its 2 s bound, and the abort is the only failure. Processes other than the chosen
 * ranks (mpirun, the other ranks) are not affected. Test-only; Linux, glibc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef long (*syscall_fn)(long, ...);

static int my_rank = -1, wait_rank = -1, die_rank = -1;

static int env_int(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : -1;
}

__attribute__((constructor)) static void shim_init(void)
{
    my_rank = env_int("PMI_RANK");
    wait_rank = env_int("WANMPI_TEST_SHIM_WAIT_RANK");
    die_rank = env_int("WANMPI_TEST_SHIM_DIE_RANK");
    if (my_rank >= 0 && my_rank == wait_rank) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGTERM);
        sigprocmask(SIG_BLOCK, &s, NULL);
    }
}

long syscall(long number, ...)
{
    static syscall_fn real;
    va_list ap;
    long a[6];
    int i;
    if (!real) real = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
    /* glibc's syscall() takes six register-sized arguments whatever the call; so do we. */
    va_start(ap, number);
    for (i = 0; i < 6; ++i) a[i] = va_arg(ap, long);
    va_end(ap);
    if (number == SYS_pidfd_open && my_rank >= 0 && (pid_t)a[0] != getpid()) {
        if (my_rank == die_rank) raise(SIGKILL);
        if (my_rank == wait_rank) {
            long fd = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
            if (fd >= 0) {
                struct pollfd p = {(int)fd, POLLIN, 0};
                poll(&p, 1, 2000); /* readable once the peer has exited */
            }
            return fd;
        }
    }
    return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
