#include "runtime/impi_wire.hpp"

#include <arpa/inet.h>
#include <cstring>

#include "base/codec.hpp"

namespace wanmpi::impi {

using base::get_be32;
using base::get_be64;
using base::put_be32;
using base::put_be64;

const std::array<uint32_t, 14> kLabelOrder = {C_VERSION, C_NHOSTS, C_NPROCS, C_DATALEN,
                                              C_TAGUB, C_COLL_XSIZE, C_COLL_MAXLINEAR, H_IPV6,
                                              H_PORT, H_NPROCS, H_ACKMARK, H_HIWATER, P_IPV6,
                                              P_PID};

const char* cmd_name(uint32_t cmd) {
    switch (cmd) {
    case CMD_AUTH: return "AUTH";
    case CMD_IMPI: return "IMPI";
    case CMD_COLL: return "COLL";
    case CMD_DONE: return "DONE";
    case CMD_FINI: return "FINI";
    case CMD_KEEP: return "KEEP";
    case CMD_BACK: return "BACK";
    case CMD_GONE: return "GONE";
    }
    return nullptr;
}

const char* label_name(uint32_t label) {
    switch (label) {
    case C_VERSION: return "IMPI_C_VERSION";
    case C_NHOSTS: return "IMPI_C_NHOSTS";
    case C_NPROCS: return "IMPI_C_NPROCS";
    case C_DATALEN: return "IMPI_C_DATALEN";
    case C_TAGUB: return "IMPI_C_TAGUB";
    case C_COLL_XSIZE: return "IMPI_C_COLL_XSIZE";
    case C_COLL_MAXLINEAR: return "IMPI_C_COLL_MAXLINEAR";
    case H_IPV6: return "IMPI_H_IPV6";
    case H_PORT: return "IMPI_H_PORT";
    case H_NPROCS: return "IMPI_H_NPROCS";
    case H_ACKMARK: return "IMPI_H_ACKMARK";
    case H_HIWATER: return "IMPI_H_HIWATER";
    case P_IPV6: return "IMPI_P_IPV6";
    case P_PID: return "IMPI_P_PID";
    }
    return nullptr;
}

void encode_cmd(const CmdHeader& h, uint8_t out[kCmdHeader]) {
    put_be32(out, h.cmd);
    put_be32(out + 4, uint32_t(h.len));
}

CmdHeader decode_cmd(const uint8_t in[kCmdHeader]) {
    return CmdHeader{get_be32(in), int32_t(get_be32(in + 4))};
}

HostId host_id_from_ipv4(const std::string& dotted) {
    HostId id{};
    in_addr a{};
    if (inet_pton(AF_INET, dotted.c_str(), &a) == 1) std::memcpy(id.data() + 12, &a, 4);
    return id;
}

std::optional<std::string> ipv4_from_host_id(const HostId& id) {
    for (int i = 0; i < 10; ++i)
        if (id[size_t(i)] != 0) return std::nullopt;
    bool compat = id[10] == 0 && id[11] == 0;
    bool mapped = id[10] == 0xff && id[11] == 0xff;
    if (!compat && !mapped) return std::nullopt;
    char b[INET_ADDRSTRLEN];
    in_addr a{};
    std::memcpy(&a, id.data() + 12, 4);
    inet_ntop(AF_INET, &a, b, sizeof b);
    return std::string(b);
}

bool packet_has_payload(uint32_t type) { return type == PK_DATA || type == PK_DATASYNC; }

void encode_packet(const Packet& p, uint8_t o[kPacketHeader]) {
    put_be32(o + 0, p.type);
    put_be32(o + 4, packet_has_payload(p.type) ? p.len : 0);
    std::memcpy(o + 8, p.src.host.data(), 16);
    put_be64(o + 24, uint64_t(p.src.pid));
    std::memcpy(o + 32, p.dest.host.data(), 16);
    put_be64(o + 48, uint64_t(p.dest.pid));
    put_be64(o + 56, p.srqid);
    put_be64(o + 64, p.drqid);
    put_be64(o + 72, p.msglen);
    put_be32(o + 80, uint32_t(p.lsrank));
    put_be32(o + 84, uint32_t(p.tag));
    put_be64(o + 88, p.cid);
    put_be64(o + 96, p.seqnum);
    put_be64(o + 104, uint64_t(p.count));
    put_be64(o + 112, p.dtype);
    put_be64(o + 120, 0);
}

void mark_compressed(uint8_t hdr[kPacketHeader], uint32_t wire_len, uint32_t raw_len,
                     uint8_t filter) {
    put_be32(hdr + 4, wire_len);
    put_be64(hdr + 120, compressed_mark(raw_len, filter));
}

bool compressed_len(const Packet& p, uint64_t maxlen, uint32_t* raw_len, std::string* err,
                    uint8_t* filter) {
    const uint32_t hi = uint32_t(p.reserved >> 32);
    const bool filtered = (hi & 0xFFFFFF00u) == uint32_t(kZstdFilterMark >> 32);
    if (hi != uint32_t(kZstdMark >> 32) && !filtered) return false;
    const uint8_t f = filtered ? uint8_t(hi & 0xFF) : 0;
    if (filter) *filter = f;
    const uint32_t raw = uint32_t(p.reserved);
    err->clear();
    if (filtered && (f == 0 || f >= kZstdFilters))
        *err = "a compressed payload with unknown filter " + std::to_string(f);
    else if (!packet_has_payload(p.type))
        *err = "a packet of type " + std::to_string(p.type) + " marked compressed";
    else if (p.len == 0 || p.len >= raw)
        *err = "a compressed payload of " + std::to_string(p.len) + " bytes for " +
               std::to_string(raw) + " raw bytes (it must be shorter)";
    else if (raw > maxlen)
        *err = "a compressed payload of " + std::to_string(raw) +
               " raw bytes exceeds the negotiated maximum of " + std::to_string(maxlen);
    else if (raw > p.msglen)
        *err = "a compressed payload of " + std::to_string(raw) +
               " raw bytes exceeds its message length " + std::to_string(p.msglen);
    *raw_len = raw;
    return true;
}

std::string decode_packet(const uint8_t in[kPacketHeader], uint64_t maxlen, Packet* p) {
    p->type = get_be32(in);
    if (p->type > PK_FINI && p->type != PK_WAN_ACK && p->type != PK_WAN_LANES)
        return "unknown packet type " + std::to_string(p->type);
    p->len = get_be32(in + 4);
    std::memcpy(p->src.host.data(), in + 8, 16);
    p->src.pid = int64_t(get_be64(in + 24));
    std::memcpy(p->dest.host.data(), in + 32, 16);
    p->dest.pid = int64_t(get_be64(in + 48));
    p->srqid = get_be64(in + 56);
    p->drqid = get_be64(in + 64);
    p->msglen = get_be64(in + 72);
    p->lsrank = int32_t(get_be32(in + 80));
    p->tag = int32_t(get_be32(in + 84));
    p->cid = get_be64(in + 88);
    p->seqnum = get_be64(in + 96);
    p->count = int64_t(get_be64(in + 104));
    p->dtype = get_be64(in + 112);
    p->reserved = get_be64(in + 120);
    if (!packet_has_payload(p->type)) {
        p->len = 0;  // LAM puts 128 there; the standard says nothing follows
        return "";
    }
    if (p->len > maxlen)
        return "packet payload of " + std::to_string(p->len) + " bytes exceeds the negotiated " +
               "maximum of " + std::to_string(maxlen);
    if (p->len > p->msglen)
        return "packet payload of " + std::to_string(p->len) + " bytes exceeds its message length " +
               std::to_string(p->msglen);
    return "";
}

}  // namespace wanmpi::impi
