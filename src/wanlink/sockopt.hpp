// Socket options newer than Debian 12's headers (glibc 2.36, linux-libc-dev 6.1), with the values
// of include/uapi/linux/tcp.h and asm-generic/socket.h. A kernel that lacks one refuses it with
// ENOPROTOOPT, which every caller treats as "keep the kernel's default" (never fatal).
//
//   option              since   unit
//   TCP_RTO_MAX_MS      6.16    ms, [1000, 120000] (the kernel refuses less than 1 s)
//   TCP_RTO_MIN_US      6.15    us, [1, 200000] (rounded to the kernel's tick)
//   TCP_DELACK_MAX_US   6.15    us, [TCP's minimum, 200000]
//   SO_MAX_PACING_RATE  4.4     bytes/s (u64 since 4.19; ~0 = unlimited); TCP paces internally
//                               (no fq qdisc needed) since 4.13
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS 44
#endif
#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif
#ifndef TCP_DELACK_MAX_US
#define TCP_DELACK_MAX_US 46
#endif
#ifndef SO_MAX_PACING_RATE
#define SO_MAX_PACING_RATE 47
#endif
