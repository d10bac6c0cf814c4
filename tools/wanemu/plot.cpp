// `wanemu plot CSV -o OUT.png|OUT.svg`: throughput over time per link direction with drops
// marked, and the queue below it, drawn by gnuplot (Debian's gnuplot-nox) from the monitor CSV.
//
// The CSV omits bins in which nothing happened; this fills them with zeros, re-bins to at most
// ~1500 points per series (or --bin), and hands gnuplot one inline data block per direction
// (the script is self-contained, so --script can save it).
//
// Colours: a direction's colour depends only on the links in the CSV (all rows, before --link,
// --from and --to filter them): the directions of those links, both ways, sorted by link and
// direction, take the palette in that order. So c0>c1 has the same colour in the throughput and
// queue panels, in a plot of one link, and in plots of other runs with the same links, however
// the rows happen to be ordered or whichever direction carried traffic first.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "common.hpp"

namespace wanmpi::wanemu {

namespace {

struct row {
    double t;
    double bytes, drop_q, drop_r, queue_bytes, late_us;
};

struct series {
    std::string key;  // "c0>c1"
    std::string link;
    std::vector<row> rows;
    double total_bytes = 0, total_drops_q = 0, total_drops_r = 0;
    std::string colour;
};

// Tableau's 10 colours without its red, which marks drops.
const char* const k_palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                 "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr size_t k_palette_size = sizeof k_palette / sizeof k_palette[0];

std::string gp_quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
        }
        out += c;
    }
    return out + "\"";
}

}  // namespace

int cmd_plot(const std::vector<std::string>& args) {
    std::string in, out, title, link_filter;
    double t_from = -1, t_to = -1;
    int64_t bin_ns = 0;
    int width = 1000, height = 620;
    std::string script_out;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size()) {
                throw error(a + " needs a value");
            }
            return args[++i];
        };
        if (a == "-o" || a == "--output") {
            out = value();
        } else if (a == "--title") {
            title = value();
        } else if (a == "--script") {
            script_out = value();
        } else if (a == "--link") {
            link_filter = value();
        } else if (a == "--from" || a == "--to") {
            std::string v = value();
            auto d = parse_duration_ns(
                v.find_first_not_of("0123456789.") == std::string::npos ? v + "s" : v);
            if (!d) {
                throw error("bad " + a + " '" + v + "' (seconds, or a duration such as 500ms)");
            }
            (a == "--from" ? t_from : t_to) = double(*d) / 1e9;
        } else if (a == "--bin") {
            auto d = parse_duration_ns(value());
            if (!d || *d <= 0) {
                throw error("bad --bin (a duration such as 10ms)");
            }
            bin_ns = *d;
        } else if (a == "--size") {
            std::string v = value();
            if (std::sscanf(v.c_str(), "%dx%d", &width, &height) != 2 || width < 200 ||
                height < 150 || width > 10000 || height > 10000) {
                throw error("bad --size '" + v + "' (WIDTHxHEIGHT, e.g. 1000x620)");
            }
        } else if (!a.empty() && a[0] == '-' && a != "-") {
            throw error("unknown plot option '" + a + "'");
        } else if (in.empty()) {
            in = a;
        } else {
            throw error("plot takes one CSV file");
        }
    }
    if (in.empty() || out.empty()) {
        throw error(
            "usage: wanemu plot CSV -o OUT.png|OUT.svg [--title T] [--link L] "
            "[--from S] [--to S] [--bin DURATION] [--size WxH] [--script OUT.gp]");
    }
    std::string ext =
        lower(out.substr(out.rfind('.') == std::string::npos ? out.size() : out.rfind('.')));
    if (ext != ".png" && ext != ".svg") {
        throw error("output must end in .png or .svg");
    }
    std::string text = in == "-" ? std::string() : read_file(in);
    if (in == "-") {
        char buf[65536];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
            text.append(buf, n);
        }
    }

    std::vector<series> ser;
    std::map<std::string, size_t> idx;
    std::vector<double> times;
    // Every direction of every link in the file, both ways: "link\tfrom\tto" (sorted).
    std::set<std::string> all_dirs;
    int lineno = 0;
    for (const auto& line : split(text, '\n')) {
        ++lineno;
        if (line.empty() || line[0] == '#' || starts_with(line, "time_s")) {
            continue;
        }
        auto f = split(line, ',', false);
        if (f.size() < 11) {
            throw error(in + ":" + std::to_string(lineno) + ": expected 11 columns");
        }
        all_dirs.insert(f[1] + "\t" + f[2] + "\t" + f[3]);
        all_dirs.insert(f[1] + "\t" + f[3] + "\t" + f[2]);
        if (!link_filter.empty() && f[1] != link_filter) {
            continue;
        }
        row r;
        r.t = std::atof(f[0].c_str());
        if ((t_from >= 0 && r.t < t_from) || (t_to >= 0 && r.t > t_to)) {
            continue;
        }
        r.bytes = std::atof(f[4].c_str());
        r.drop_q = std::atof(f[6].c_str());
        r.drop_r = std::atof(f[7].c_str());
        r.queue_bytes = std::atof(f[8].c_str());
        r.late_us = std::atof(f[10].c_str());
        std::string key = f[2] + ">" + f[3];
        auto it = idx.find(f[1] + " " + key);
        if (it == idx.end()) {
            it = idx.emplace(f[1] + " " + key, ser.size()).first;
            ser.push_back(series{key, f[1], {}, 0, 0, 0, {}});
        }
        auto& s = ser[it->second];
        s.rows.push_back(r);
        s.total_bytes += r.bytes;
        s.total_drops_q += r.drop_q;
        s.total_drops_r += r.drop_r;
        times.push_back(r.t);
    }
    if (ser.empty()) {
        throw error("no traffic in " + in +
                    (link_filter.empty() ? "" : " for link " + link_filter));
    }
    // Stable colours (see the top of the file), and series in the same order as their colours.
    for (auto& s : ser) {
        size_t pos = size_t(std::distance(
            all_dirs.begin(), all_dirs.find(s.link + "\t" + s.key.substr(0, s.key.find('>')) +
                                            "\t" + s.key.substr(s.key.find('>') + 1))));
        s.colour = k_palette[pos % k_palette_size];
    }
    std::stable_sort(ser.begin(), ser.end(), [](const series& x, const series& y) {
        return std::tie(x.link, x.key) < std::tie(y.link, y.key);
    });
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    double interval = 0.001;
    if (times.size() > 1) {
        interval = 1e9;
        for (size_t i = 1; i < times.size(); ++i) {
            interval = std::min(interval, times[i] - times[i - 1]);
        }
        interval = std::max(interval, 1e-6);
    }
    double tmin = t_from >= 0 ? t_from : times.front();
    double tmax = (t_to >= 0 ? t_to : times.back()) + interval;
    double bin = bin_ns > 0 ? double(bin_ns) / 1e9 : interval;
    if (bin_ns == 0) {
        while ((tmax - tmin) / bin > 1500) {
            bin *= 2;
        }
    }
    bin = std::max(bin, interval);
    size_t nbins = size_t(std::ceil((tmax - tmin) / bin)) + 1;

    std::string script;
    double drops_total = 0;
    for (const auto& s : ser) {
        drops_total += s.total_drops_q + s.total_drops_r;
    }
    // Data: one inline block per direction ($d0, $d1, ...), columns time, Mbit/s, queue KB,
    // queue drops, random drops, worst lateness (ms).
    for (size_t k = 0; k < ser.size(); ++k) {
        std::vector<double> bytes(nbins), dq(nbins), dr(nbins), q(nbins), late(nbins);
        for (const auto& r : ser[k].rows) {
            size_t b = size_t(std::max(0.0, std::floor((r.t - tmin) / bin + 1e-9)));
            if (b >= nbins) {
                continue;
            }
            bytes[b] += r.bytes;
            dq[b] += r.drop_q;
            dr[b] += r.drop_r;
            q[b] = std::max(q[b], r.queue_bytes);
            late[b] = std::max(late[b], r.late_us);
        }
        script += "$d" + std::to_string(k) + " << EOD\n";
        char line[256];
        for (size_t b = 0; b < nbins; ++b) {
            std::snprintf(line, sizeof line, "%.6f %.4f %.3f %.0f %.0f %.3f\n",
                          tmin + double(b) * bin, bytes[b] * 8 / bin / 1e6, q[b] / 1024, dq[b],
                          dr[b], late[b] / 1000);
            script += line;
        }
        script += "EOD\n";
    }
    const bool png = ext == ".png";
    script += png ? "set terminal pngcairo size " + std::to_string(width) + "," +
                        std::to_string(height) + " font 'DejaVu Sans,10'\n"
                  : "set terminal svg size " + std::to_string(width) + "," +
                        std::to_string(height) + " dynamic font 'DejaVu Sans,10'\n";
    script += "set output " + gp_quote(out) + "\n";
    std::string ttl = title.empty() ? "wanemu traffic monitor" : title;
    char sub[256];
    std::snprintf(sub, sizeof sub, "bins of %g ms", bin * 1000);
    script += "set multiplot title " + gp_quote(ttl + "  (" + sub + ")") + "\n";
    // Both panels share the left margin so their time axes line up.
    script += "set lmargin 11\nset rmargin 4\nset grid lc rgb '#dddddd'\n";
    script += "set xrange [" + std::to_string(tmin) + ":" + std::to_string(tmax) + "]\n";
    // One line style per direction, used by both panels: the colour goes with the direction.
    for (size_t k = 0; k < ser.size(); ++k) {
        script += "set style line " + std::to_string(k + 1) + " lc rgb '" + ser[k].colour +
                  "' lw 1.5  # " + ser[k].link + " " + ser[k].key + "\n";
    }
    auto name = [&](size_t k) {
        return (ser.size() > 2 ? ser[k].link + " " : std::string()) + ser[k].key;
    };
    // Top: throughput and drops.
    script +=
        "set origin 0,0.36\nset size 1,0.58\nset ylabel 'delivered (Mbit/s)'\n"
        "set format x ''\nset xlabel ''\nset yrange [0:*]\n"
        "set key outside top center horizontal samplen 2\n";
    std::string plot = "plot ";
    for (size_t k = 0; k < ser.size(); ++k) {
        plot += (k ? ", " : "") + std::string("$d") + std::to_string(k) +
                " using 1:2 with steps ls " + std::to_string(k + 1) + " title " + gp_quote(name(k));
    }
    for (size_t k = 0; k < ser.size() && drops_total > 0; ++k) {
        double d = ser[k].total_drops_q + ser[k].total_drops_r;
        if (d == 0) {
            continue;
        }
        char lbl[160];
        std::snprintf(lbl, sizeof lbl, "drops %s (%.0f queue, %.0f random)", ser[k].key.c_str(),
                      ser[k].total_drops_q, ser[k].total_drops_r);
        plot += ", $d" + std::to_string(k) + " using 1:(($4+$5)>0 ? $2 : 1/0) with points pt " +
                std::to_string(k % 2 ? 11 : 9) + " ps 0.9 lc rgb '#d62728' title " + gp_quote(lbl);
    }
    script += plot + "\n";
    // Bottom: queue.
    script +=
        "set origin 0,0\nset size 1,0.38\nset ylabel 'queue (KB)'\n"
        "set format x '%g'\nset xlabel 'time (s)'\nset yrange [0:*]\nunset key\n";
    plot = "plot ";
    for (size_t k = 0; k < ser.size(); ++k) {
        plot += (k ? ", " : "") + std::string("$d") + std::to_string(k) +
                " using 1:3 with steps ls " + std::to_string(k + 1) + " title " + gp_quote(name(k));
    }
    script += plot + "\nunset multiplot\n";
    if (!script_out.empty()) {
        write_file_atomic(script_out, script);
        std::printf("wrote %s (gnuplot script for %s; %zu direction(s), %.1f s, bins of %g ms)\n",
                    script_out.c_str(), out.c_str(), ser.size(), tmax - tmin, bin * 1000);
        return 0;
    }
    auto r = run_command({"gnuplot"}, script);
    if (r.status != 0) {
        throw error("gnuplot failed: " + std::string(trim(r.out)));
    }
    std::printf("wrote %s (%zu direction(s), %.1f s, bins of %g ms)\n", out.c_str(), ser.size(),
                tmax - tmin, bin * 1000);
    return 0;
}

}  // namespace wanmpi::wanemu
