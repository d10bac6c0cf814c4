// MPI-IO collective reads and writes: two-phase I/O (del Rosario, Bordawekar, Choudhary 1993;
// the algorithm of ROMIO's ad_*_wrcoll/rdcoll).
//
// Every rank maps its access to file ranges (view.cpp), then one allgather of each rank's
// [first byte, end) decides the method:
//   - independent (each rank pread/pwrite its own ranges) when collective buffering is disabled
//     for the direction (hint romio_cb_write / romio_cb_read = "disable"), in atomic mode (the
//     range locks of access.cpp then apply), or, when the hint is "automatic" (the default),
//     when every rank's access is one contiguous range and no two ranks' ranges interleave, or
//     when the contiguous pieces are large (hint wanmpi_cb_small_piece, default 4 KiB: a piece
//     of that size or more is cheaper to pwrite than to ship to an aggregator);
//   - two-phase otherwise (or when the hint is "enable").
// Two-phase: the byte span [min first, max end) of all ranks is cut into one file domain per
// aggregator (cb_nodes aggregators, default every rank, spread evenly over the ranks; domains
// of over 1 MiB rounded to 4 KiB). Each domain is handled in rounds of cb_buffer_size bytes
// (default 16 MiB); in round r every aggregator owns the r-th window of its domain. Per round:
//   write: alltoall of (pieces, bytes) per aggregator, alltoallv of the pieces' (offset, length),
//          alltoallv of their data; each aggregator places the data in its window buffer and
//          pwrites each maximal covered run (never the holes between them, so no read-modify-
//          write and no lock is needed: ranks only ever write bytes they own);
//   read:  the same requests go to the aggregators, which pread the span their window's requests
//          cover in one call (data sieving) and alltoallv the pieces back.
// All ranks run the same number of rounds (the largest domain's), so the collectives match.
// A final allreduce carries any rank's I/O error to every rank.
//
// Cost: the pieces' list is 16 bytes per contiguous piece; a view whose blocks are single
// elements makes long lists (the ROMIO trade-off too).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

#include "bindings/impl.hpp"
#include "core/errors.hpp"
#include "io/file.hpp"

namespace wanmpi::io {
namespace {

struct Plan {
    int naggr = 1;
    std::vector<int> agg_rank;  // aggregator i's rank
    int64_t lo = 0, fd = 0, hi = 0;  // domains: [lo + i*fd, min(hi, lo + (i+1)*fd))
    int64_t cb = 0;
    int64_t rounds = 0;
    int64_t win_lo(int i, int64_t r) const { return lo + i * fd + r * cb; }
    int64_t win_hi(int i, int64_t r) const {
        return std::min({hi, lo + (i + 1) * fd, win_lo(i, r) + cb});
    }
};

// This rank's pieces for aggregator i in round r: segs (sorted by file offset) clipped to the
// window; cursor[i] skips what earlier rounds consumed.
void pieces_for(const Plan& p, const std::vector<Seg>& segs, int i, int64_t r, size_t* cursor,
                std::vector<Seg>* out) {
    int64_t wl = p.win_lo(i, r), wh = p.win_hi(i, r);
    if (wl >= wh) return;
    while (*cursor < segs.size() && segs[*cursor].foff + segs[*cursor].len <= wl) ++*cursor;
    for (size_t j = *cursor; j < segs.size() && segs[j].foff < wh; j++) {
        const Seg& g = segs[j];
        int64_t a = std::max(g.foff, wl), b = std::min(g.foff + g.len, wh);
        if (a < b) out->push_back({a, b - a, g.soff + (a - g.foff)});
    }
}

int io_error(File* f, bool write, int err) {
    return sys_error(err, write ? "write" : "read", f->path);
}

// One round of two-phase I/O. `mine[i]` = this rank's pieces for aggregator i. A read stores
// only stream bytes below `limit` (what lies before the end of file): the user's buffer beyond
// what was read stays untouched.
int round_trip(File* f, bool write, const Plan& p, int64_t r, int my_agg,
               const std::vector<std::vector<Seg>>& mine, char* stream, int64_t limit) {
    const int n = f->size;
    std::vector<int> scnt(n, 0), sdsp(n, 0), rcnt(n, 0), rdsp(n, 0);
    // (pieces, bytes) per peer: only aggregators receive requests.
    std::vector<int> sendc(2 * n, 0), recvc(2 * n, 0);
    for (int i = 0; i < p.naggr; i++) {
        int64_t bytes = 0;
        for (const Seg& g : mine[i]) bytes += g.len;
        sendc[2 * p.agg_rank[i]] = int(mine[i].size());
        sendc[2 * p.agg_rank[i] + 1] = int(bytes);
    }
    impl::Alltoall(sendc.data(), 2, MPI_INT, recvc.data(), 2, MPI_INT, f->comm);

    // The pieces' (offset, length) to the aggregators.
    std::vector<int64_t> smeta, rmeta;
    for (int i = 0; i < p.naggr; i++)
        for (const Seg& g : mine[i]) {
            smeta.push_back(g.foff);
            smeta.push_back(g.len);
        }
    int64_t tot = 0;
    for (int q = 0, off = 0; q < n; q++) {
        scnt[q] = 2 * sendc[2 * q];
        sdsp[q] = off;
        off += scnt[q];
    }
    for (int q = 0; q < n; q++) {
        rcnt[q] = 2 * recvc[2 * q];
        rdsp[q] = int(tot);
        tot += rcnt[q];
    }
    rmeta.resize(size_t(tot));
    impl::Alltoallv(smeta.data(), scnt.data(), sdsp.data(), MPI_INT64_T, rmeta.data(),
                    rcnt.data(), rdsp.data(), MPI_INT64_T, f->comm);

    int rc = MPI_SUCCESS;
    int64_t wl = my_agg >= 0 ? p.win_lo(my_agg, r) : 0;
    int64_t wh = my_agg >= 0 ? p.win_hi(my_agg, r) : 0;
    // Uninitialized buffers: they are large (cb_buffer_size) and every byte used is written.
    std::unique_ptr<char[]> win(my_agg >= 0 && wh > wl ? new char[size_t(wh - wl)] : nullptr);
    // Data bytes per peer, in the order of the pieces.
    for (int q = 0, off = 0; q < n; q++) {
        scnt[q] = write ? sendc[2 * q + 1] : recvc[2 * q + 1];
        sdsp[q] = off;
        off += scnt[q];
    }
    for (int q = 0, off = 0; q < n; q++) {
        rcnt[q] = write ? recvc[2 * q + 1] : sendc[2 * q + 1];
        rdsp[q] = off;
        off += rcnt[q];
    }
    std::unique_ptr<char[]> sdata(new char[size_t(sdsp[n - 1] + scnt[n - 1]) + 1]);
    std::unique_ptr<char[]> rdata(new char[size_t(rdsp[n - 1] + rcnt[n - 1]) + 1]);
    if (write) {
        char* o = sdata.get();
        for (int i = 0; i < p.naggr; i++)
            for (const Seg& g : mine[i]) {
                std::memcpy(o, stream + g.soff, size_t(g.len));
                o += g.len;
            }
        impl::Alltoallv(sdata.get(), scnt.data(), sdsp.data(), MPI_BYTE, rdata.get(),
                        rcnt.data(), rdsp.data(), MPI_BYTE, f->comm);
        if (my_agg >= 0 && !rmeta.empty()) {
            std::vector<std::pair<int64_t, int64_t>> runs;
            const char* d = rdata.get();
            for (size_t k = 0; k < rmeta.size(); k += 2) {
                int64_t off = rmeta[k], len = rmeta[k + 1];
                std::memcpy(win.get() + (off - wl), d, size_t(len));
                d += len;
                runs.push_back({off, off + len});
            }
            std::sort(runs.begin(), runs.end());
            std::vector<Seg> out;
            for (auto [a, b] : runs) {
                if (!out.empty() && a <= out.back().foff + out.back().len)
                    out.back().len = std::max(out.back().len, b - out.back().foff);
                else
                    out.push_back({a, b - a, a - wl});
            }
            int64_t moved = 0;
            rc = rw_segs(f, true, out, win.get(), &moved);
        }
    } else {
        if (my_agg >= 0 && !rmeta.empty()) {
            int64_t a = INT64_MAX, b = 0;
            for (size_t k = 0; k < rmeta.size(); k += 2) {
                a = std::min(a, rmeta[k]);
                b = std::max(b, rmeta[k] + rmeta[k + 1]);
            }
            // One read over the span (data sieving); past the end of file reads zeros.
            int64_t got = 0;
            while (got < b - a) {
                ssize_t m = ::pread(f->fd, win.get() + (a - wl) + got, size_t(b - a - got),
                                    a + got);
                if (m < 0 && errno == EINTR) continue;
                if (m < 0) {
                    rc = io_error(f, false, errno);
                    break;
                }
                if (m == 0) break;
                got += m;
            }
            std::memset(win.get() + (a - wl) + got, 0, size_t(b - a - got));
            char* o = sdata.get();
            for (size_t k = 0; k < rmeta.size(); k += 2) {
                std::memcpy(o, win.get() + (rmeta[k] - wl), size_t(rmeta[k + 1]));
                o += rmeta[k + 1];
            }
        }
        impl::Alltoallv(sdata.get(), scnt.data(), sdsp.data(), MPI_BYTE, rdata.get(),
                        rcnt.data(), rdsp.data(), MPI_BYTE, f->comm);
        const char* d = rdata.get();
        for (int i = 0; i < p.naggr; i++)
            for (const Seg& g : mine[i]) {
                int64_t keep = std::min(g.len, limit - g.soff);
                if (keep > 0) std::memcpy(stream + g.soff, d, size_t(keep));
                d += g.len;
            }
    }
    return rc;
}

}  // namespace

int collective_rw(File* f, bool write, int64_t data_off, Stream* s, int64_t* done) {
    *done = 0;
    std::vector<Seg> segs;
    view_map(f->view, data_off, s->bytes, 0, &segs);
    int64_t eof = -1;
    if (!write) {
        struct stat sb;
        if (::fstat(f->fd, &sb) == 0) eof = sb.st_size;
    }
    // What a read gets: the stream up to the first byte at or past the end of file.
    int64_t readable = 0;
    for (const Seg& g : segs) {
        if (write || g.foff + g.len <= eof) {
            readable += g.len;
            continue;
        }
        readable += std::max<int64_t>(0, eof - g.foff);
        break;
    }
    if (!std::is_sorted(segs.begin(), segs.end(),
                        [](const Seg& a, const Seg& b) { return a.foff < b.foff; }))
        std::sort(segs.begin(), segs.end(),
                  [](const Seg& a, const Seg& b) { return a.foff < b.foff; });
    // [first byte, end, noncontiguous, pieces, bytes] of every rank
    int64_t me[5] = {INT64_MAX, -1, segs.size() > 1, int64_t(segs.size()), s->bytes};
    for (const Seg& g : segs) {
        me[0] = std::min(me[0], g.foff);
        me[1] = std::max(me[1], g.foff + g.len);
    }
    std::vector<int64_t> all(size_t(5 * f->size));
    impl::Allgather(me, 5, MPI_INT64_T, all.data(), 5, MPI_INT64_T, f->comm);

    Plan p;
    p.lo = INT64_MAX;
    p.hi = -1;
    bool noncontig = false;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    int64_t pieces = 0, bytes = 0;
    for (int q = 0; q < f->size; q++) {
        const int64_t* x = &all[size_t(5 * q)];
        if (x[1] < 0) continue;  // no data on rank q
        p.lo = std::min(p.lo, x[0]);
        p.hi = std::max(p.hi, x[1]);
        noncontig |= x[2] != 0;
        pieces += x[3];
        bytes += x[4];
        ranges.push_back({x[0], x[1]});
    }
    std::sort(ranges.begin(), ranges.end());
    bool interleaved = false;
    for (size_t k = 1; k < ranges.size(); k++) interleaved |= ranges[k].first < ranges[k - 1].second;
    int mode = write ? f->hints.cb_write : f->hints.cb_read;
    // Automatic: aggregation pays when the file would otherwise see many small requests. With
    // pieces of cb_small_piece bytes or more on average, each rank's own pread/pwrite calls
    // cost less than moving all the data through the aggregators (measured: bench/compare-io.sh,
    // docs/benchmarks.md); a parallel file system with costly requests wants a larger value.
    bool small = pieces > 0 && bytes / pieces < f->hints.cb_small_piece;
    bool two_phase = mode == 1 || (mode == 2 && (noncontig || interleaved) && small);
    if (f->atomic || p.hi <= p.lo) two_phase = false;

    int rc = MPI_SUCCESS;
    if (!two_phase) {
        rc = indep_rw(f, write, data_off, s, done);
    } else {
        p.naggr = f->hints.cb_nodes > 0 ? std::min(f->hints.cb_nodes, f->size) : f->size;
        int my_agg = -1;
        for (int i = 0; i < p.naggr; i++) {
            p.agg_rank.push_back(int(int64_t(i) * f->size / p.naggr));
            if (p.agg_rank.back() == f->rank) my_agg = i;
        }
        int64_t span = p.hi - p.lo;
        p.fd = (span + p.naggr - 1) / p.naggr;
        // Domains of large accesses start on 4 KiB boundaries (page-aligned writes); small
        // ones are split exactly, so every aggregator gets a share.
        if (p.fd > (1 << 20)) p.fd = (p.fd + 4095) / 4096 * 4096;
        // A round's data must fit the int counts of MPI_Alltoallv.
        p.cb = std::min<int64_t>(std::max<int64_t>(f->hints.cb_buffer_size, 16),
                                 INT_MAX / std::max(1, f->size));
        p.rounds = (p.fd + p.cb - 1) / p.cb;
        std::vector<size_t> cursor(size_t(p.naggr), 0);
        std::vector<std::vector<Seg>> mine(size_t(p.naggr));
        for (int64_t r = 0; r < p.rounds; r++) {
            for (int i = 0; i < p.naggr; i++) {
                mine[i].clear();
                pieces_for(p, segs, i, r, &cursor[size_t(i)], &mine[i]);
            }
            int rrc = round_trip(f, write, p, r, my_agg, mine, s->p, readable);
            if (rc == MPI_SUCCESS) rc = rrc;
        }
        if (rc == MPI_SUCCESS) *done = write ? s->bytes : readable;
    }
    // Every rank learns whether any rank's part failed.
    int64_t bad = rc != MPI_SUCCESS, anybad = 0;
    impl::Allreduce(&bad, &anybad, 1, MPI_INT64_T, MPI_MAX, f->comm);
    if (rc == MPI_SUCCESS && anybad)
        rc = core::make_error(MPI_ERR_IO, "collective %s of %s failed on another rank",
                              write ? "write" : "read", f->path.c_str());
    if (!two_phase && !write && rc == MPI_SUCCESS) *done = std::min(*done, s->bytes);
    return rc;
}

}  // namespace wanmpi::io
