#include "runtime/pmi_server.hpp"

#include "runtime/pmi_wire.hpp"

namespace wanmpi::runtime {

std::string pmi_process_mapping(const std::vector<int>& per_node) {
    // MPICH's "vector" form: runs of consecutive nodes with the same number of ranks, blocked.
    std::string r = "(vector";
    size_t i = 0;
    while (i < per_node.size()) {
        size_t j = i;
        while (j < per_node.size() && per_node[j] == per_node[i]) ++j;
        r += ",(" + std::to_string(i) + "," + std::to_string(j - i) + "," +
             std::to_string(per_node[i]) + ")";
        i = j;
    }
    r += ")";
    return r;
}

PmiServer::PmiServer(PmiJobInfo info, SendFn send)
    : info_(std::move(info)), send_(std::move(send)), ranks_(static_cast<size_t>(info_.size)) {
    if (!info_.process_mapping.empty()) kvs_["PMI_process_mapping"] = info_.process_mapping;
}

void PmiServer::fail_barrier() {
    if (waiting_ == 0) return;
    const RankState& g = ranks_[first_gone_];
    std::string why = "rank " + std::to_string(first_gone_) + " " + g.gone_how +
                      " and can never reach the barrier";
    std::string line = format_pmi_line(PmiMsg("barrier_out").add("rc", -1).add("msg", why));
    for (size_t r = 0; r < ranks_.size(); ++r) {
        if (!ranks_[r].in_barrier) continue;
        ranks_[r].in_barrier = false;
        if (!ranks_[r].gone) reply(static_cast<int>(r), line);
    }
    waiting_ = 0;
}

int PmiServer::on_rank_gone(int rank, const std::string& how) {
    RankState& st = ranks_[rank];
    if (st.gone) return 0;
    st.gone = true;
    st.gone_how = how;
    if (first_gone_ < 0) first_gone_ = rank;
    int waiting = waiting_;
    fail_barrier();
    return waiting;
}

PmiServer::Event PmiServer::on_line(int rank, std::string_view line) {
    Event ev;
    RankState& st = ranks_[rank];
    auto proto = [&](std::string msg) {
        ev.kind = Event::protocol_error;
        ev.message = std::move(msg);
        return ev;
    };
    if (st.in_mcmd) {
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
        if (line == "endcmd") {
            st.in_mcmd = false;
            reply(rank, format_pmi_line(PmiMsg("spawn_result")
                                            .add("rc", -1)
                                            .add("msg", "MPI_Comm_spawn_is_not_supported")));
        }
        return ev;
    }
    if (line.substr(0, 10) == "mcmd=spawn") {
        st.in_mcmd = true;
        return ev;
    }
    PmiMsg m;
    base::Status s = parse_pmi_line(line, &m);
    if (!s.ok()) {
        std::string hint;
        if (line.size() >= 10 && line.substr(6, 4) == "cmd=")
            hint = " (this looks like the PMI-2 wire protocol; wanmpi's mpirun speaks PMI-1)";
        return proto("sent a malformed PMI command: " + s.message() + ": \"" +
                     printable_excerpt(line) + "\"" + hint);
    }
    const std::string& c = m.cmd;
    if (c == "init") {
        auto v = m.get_int("pmi_version");
        if (v && *v != 1) {
            reply(rank, format_pmi_line(PmiMsg("response_to_init")
                                            .add("pmi_version", 1)
                                            .add("pmi_subversion", 1)
                                            .add("rc", -1)
                                            .add("msg", "only_PMI_version_1_is_supported")));
            return ev;
        }
        st.initialized = true;
        reply(rank, format_pmi_line(PmiMsg("response_to_init")
                                        .add("pmi_version", 1)
                                        .add("pmi_subversion", 1)
                                        .add("rc", 0)));
    } else if (c == "get_maxes") {
        reply(rank, format_pmi_line(PmiMsg("maxes")
                                        .add("kvsname_max", info_.kvsname_max)
                                        .add("keylen_max", info_.keylen_max)
                                        .add("vallen_max", info_.vallen_max)));
    } else if (c == "get_my_kvsname") {
        reply(rank, format_pmi_line(PmiMsg("my_kvsname").add("kvsname", info_.kvsname)));
    } else if (c == "get_appnum") {
        reply(rank, format_pmi_line(PmiMsg("appnum").add("appnum", info_.appnum)));
    } else if (c == "get_universe_size") {
        reply(rank, format_pmi_line(PmiMsg("universe_size").add("size", info_.universe_size)));
    } else if (c == "put") {
        const std::string* kvs = m.find("kvsname");
        const std::string* key = m.find("key");
        const std::string* val = m.find("value");
        std::string err;
        if (!key || !val) err = "put_needs_key_and_value";
        else if (kvs && *kvs != info_.kvsname) err = "unknown_kvsname";
        else if (!pmi_key_ok(*key) || key->size() >= static_cast<size_t>(info_.keylen_max))
            err = "invalid_key";
        // Values larger than advertised are accepted (the line length is bounded by the caller);
        // the advertised maximum is what portable clients rely on.
        if (!err.empty()) {
            reply(rank, format_pmi_line(PmiMsg("put_result").add("rc", -1).add("msg", err)));
        } else {
            kvs_[*key] = *val;
            reply(rank, format_pmi_line(PmiMsg("put_result").add("rc", 0).add("msg", "success")));
        }
    } else if (c == "get") {
        const std::string* kvs = m.find("kvsname");
        const std::string* key = m.find("key");
        auto it = key ? kvs_.find(*key) : kvs_.end();
        if (key && (!kvs || *kvs == info_.kvsname) && it != kvs_.end()) {
            PmiMsg r("get_result");
            r.add("rc", 0).add("msg", "success").add("value", it->second);
            reply(rank, format_pmi_line(r));
        } else {
            std::string k = key ? *key : std::string("(none)");
            for (char& ch : k)
                if (ch == ' ') ch = '_';
            reply(rank, format_pmi_line(PmiMsg("get_result")
                                            .add("rc", -1)
                                            .add("msg", "key_" + k + "_not_found")
                                            .add("value", "unknown")));
        }
    } else if (c == "barrier_in") {
        if (st.in_barrier)
            return proto("entered the PMI barrier twice without waiting for barrier_out");
        st.in_barrier = true;
        ++waiting_;
        if (first_gone_ >= 0) {
            ev.kind = Event::barrier_failed;
            ev.code = waiting_;
            ev.culprit = first_gone_;
            ev.message = ranks_[first_gone_].gone_how;
            fail_barrier();
        } else if (waiting_ == info_.size) {
            std::string out = format_pmi_line(PmiMsg("barrier_out"));
            for (size_t r = 0; r < ranks_.size(); ++r) {
                ranks_[r].in_barrier = false;
                reply(static_cast<int>(r), out);
            }
            waiting_ = 0;
        }
    } else if (c == "finalize") {
        st.finalized = true;
        reply(rank, format_pmi_line(PmiMsg("finalize_ack")));
    } else if (c == "abort") {
        ev.kind = Event::abort;
        ev.code = static_cast<int>(m.get_int("exitcode").value_or(1));
        // Clients that do not escape spaces (MPICH < 4.1) split the message into several tokens:
        // take everything after "message=" to the end of the line.
        size_t at = line.find(" message=");
        if (at != std::string_view::npos) {
            std::string_view rest = line.substr(at + 9);
            while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r'))
                rest.remove_suffix(1);
            ev.message = pmi_unescape(rest);
        }
    } else if (c == "publish_name" || c == "unpublish_name" || c == "lookup_name") {
        std::string r = c.substr(0, c.size() - 5) + "_result";  // publish_result, ...
        reply(rank, format_pmi_line(
                        PmiMsg(r).add("rc", -1).add("msg", "name_publishing_is_not_supported")));
    } else {
        reply(rank, format_pmi_line(
                        PmiMsg(c + "_result").add("rc", -1).add("msg", "unknown_PMI_command")));
    }
    return ev;
}

}  // namespace wanmpi::runtime
