// MPI_Info: the object table, MPI_INFO_ENV, and the C entry points (see info.hpp).
//
// Limits (mpi.h): a key is 1..MPI_MAX_INFO_KEY characters (MPI_ERR_INFO_KEY otherwise), a value
// 1..MPI_MAX_INFO_VAL characters (MPI_ERR_INFO_VALUE; an empty value is rejected like MPICH
// does). MPI_INFO_ENV is read-only; MPI_INFO_NULL is an error everywhere except as "no info".
#include "core/info.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sys/utsname.h>
#include <unistd.h>

#include "bindings/impl.hpp"
#include "core/api.hpp"
#include "core/engine.hpp"
#include "core/errors.hpp"

namespace wanmpi::core {

namespace {

constexpr uint32_t kInfoBase = 0x5c000000u;
constexpr uint32_t kEnvIndex = 1;

struct InfoObj {
    InfoPairs pairs;
};

struct InfoTable {
    std::vector<std::unique_ptr<InfoObj>> objs;  // index -> object (nullptr: free)
    std::vector<uint32_t> free_list;
    InfoObj env;
    bool env_final = false;  // built after MPI_Init: no longer changes
};
InfoTable& table() {
    static InfoTable t;
    if (t.objs.empty()) t.objs.resize(kEnvIndex + 1);  // 0 unused, 1 = MPI_INFO_ENV
    return t;
}

const char* thread_level_name(int level) {
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
    }
}

// The standard MPI_INFO_ENV keys (MPI 4.0 §11.2.3) wanmpi can answer: command and argv (the
// given arguments, else the process's command line), maxprocs (the launcher's PMI_SIZE, the
// same before and after MPI_Init), arch, wdir, host; thread_level once MPI is initialized.
// "soft" and "file" are not set: wanmpi's mpirun has no such options.
InfoPairs env_pairs(int argc, char** argv, bool from_proc, bool with_thread_level) {
    InfoPairs p;
    std::vector<std::string> args;
    if (argc > 0 && argv) {
        for (int i = 0; i < argc && argv[i]; ++i) args.emplace_back(argv[i]);
    } else if (from_proc) {
        std::ifstream f("/proc/self/cmdline", std::ios::binary);
        std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        size_t s = 0;
        while (s < all.size()) {
            size_t e = all.find('\0', s);
            if (e == std::string::npos) e = all.size();
            args.push_back(all.substr(s, e - s));
            s = e + 1;
        }
    }
    auto add = [&](const char* k, std::string v) {
        if (v.empty()) return;
        if (v.size() > size_t(MPI_MAX_INFO_VAL)) v.resize(size_t(MPI_MAX_INFO_VAL));
        p.emplace_back(k, std::move(v));
    };
    if (!args.empty()) add("command", args[0]);
    if (args.size() > 1) {
        std::string a;
        for (size_t i = 1; i < args.size(); ++i) a += (i > 1 ? " " : "") + args[i];
        add("argv", a);
    }
    const char* n = std::getenv("PMI_SIZE");
    add("maxprocs", n && *n ? std::string(n) : std::to_string(world_size()));
    struct utsname u;
    if (uname(&u) == 0) add("arch", u.machine);
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) add("wdir", cwd);
    char hn[256] = {};
    if (gethostname(hn, sizeof hn - 1) == 0) add("host", hn);
    if (with_thread_level) add("thread_level", thread_level_name(thread_level()));
    return p;
}

InfoObj* env_obj() {
    auto& t = table();
    if (!t.env_final) {
        bool init = g_init_state.load() == 1;
        t.env.pairs = env_pairs(0, nullptr, true, init);
        t.env_final = init;
    }
    return &t.env;
}

InfoObj* lookup(MPI_Info h) {
    uint32_t u = uint32_t(h);
    if ((u & 0xff000000u) != kInfoBase) return nullptr;
    uint32_t idx = u & 0xffffffu;
    if (idx == kEnvIndex) return env_obj();
    auto& t = table();
    return idx < t.objs.size() ? t.objs[idx].get() : nullptr;
}

MPI_Info new_obj(InfoPairs pairs) {
    auto& t = table();
    uint32_t idx;
    if (!t.free_list.empty()) {
        idx = t.free_list.back();
        t.free_list.pop_back();
    } else {
        idx = uint32_t(t.objs.size());
        t.objs.emplace_back();
    }
    t.objs[idx] = std::make_unique<InfoObj>(InfoObj{std::move(pairs)});
    return MPI_Info(kInfoBase | idx);
}

const std::string* find(const InfoObj* o, const char* key) {
    for (auto& kv : o->pairs)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

}  // namespace

bool info_valid(MPI_Info info) { return lookup(info) != nullptr; }

int info_arg_check(MPI_Info info, const char* fname) {
    if (info == MPI_INFO_NULL || info_valid(info)) return MPI_SUCCESS;
    return fname ? make_error(MPI_ERR_INFO, "%s: invalid info handle 0x%x", fname, unsigned(info))
                 : make_error(MPI_ERR_INFO, "invalid info handle 0x%x", unsigned(info));
}

bool info_contents(MPI_Info info, InfoPairs* out) {
    out->clear();
    if (info == MPI_INFO_NULL) return true;
    InfoObj* o = lookup(info);
    if (!o) return false;
    *out = o->pairs;
    return true;
}

bool info_value(MPI_Info info, const std::string& key, std::string* value) {
    InfoObj* o = info == MPI_INFO_NULL ? nullptr : lookup(info);
    if (!o) return false;
    const std::string* v = find(o, key.c_str());
    if (!v) return false;
    *value = *v;
    return true;
}

MPI_Info info_create(const InfoPairs& pairs) { return new_obj(pairs); }

}  // namespace wanmpi::core

namespace wanmpi::impl {
using namespace wanmpi::core;

// Errors of info calls have no communicator: MPI_COMM_WORLD's handler (fatal before MPI_Init).
#define INFO_ERR(cls, ...) raise(nullptr, make_error(cls, __VA_ARGS__))

static InfoObj* get_info(MPI_Info info, int* err) {
    if (info == MPI_INFO_NULL) {
        *err = INFO_ERR(MPI_ERR_INFO, "info is MPI_INFO_NULL");
        return nullptr;
    }
    InfoObj* o = lookup(info);
    if (!o) *err = INFO_ERR(MPI_ERR_INFO, "invalid info object 0x%x", unsigned(info));
    return o;
}

// An info the caller may change: not MPI_INFO_ENV.
static InfoObj* get_mutable(MPI_Info info, int* err) {
    if (info == MPI_INFO_ENV) {
        *err = INFO_ERR(MPI_ERR_INFO, "MPI_INFO_ENV is predefined and cannot be changed");
        return nullptr;
    }
    return get_info(info, err);
}

// Key check: MPI_ERR_INFO_KEY for NULL, empty or too long keys.
static bool key_ok(const char* key, int* err) {
    if (!key) {
        *err = INFO_ERR(MPI_ERR_INFO_KEY, "key is NULL");
        return false;
    }
    size_t n = std::strlen(key);
    if (n == 0) {
        *err = INFO_ERR(MPI_ERR_INFO_KEY, "key is empty");
        return false;
    }
    if (n > size_t(MPI_MAX_INFO_KEY)) {
        *err = INFO_ERR(MPI_ERR_INFO_KEY, "key of %zu characters is longer than "
                                          "MPI_MAX_INFO_KEY (%d)", n, MPI_MAX_INFO_KEY);
        return false;
    }
    return true;
}

int Info_create(MPI_Info* info) {
    if (!info) return INFO_ERR(MPI_ERR_ARG, "info is NULL");
    *info = new_obj({});
    return MPI_SUCCESS;
}

int Info_set(MPI_Info info, const char* key, const char* value) {
    int err = MPI_SUCCESS;
    InfoObj* o = get_mutable(info, &err);
    if (!o) return err;
    if (!key_ok(key, &err)) return err;
    if (!value) return INFO_ERR(MPI_ERR_INFO_VALUE, "value of key \"%s\" is NULL", key);
    size_t n = std::strlen(value);
    if (n == 0) return INFO_ERR(MPI_ERR_INFO_VALUE, "value of key \"%s\" is empty", key);
    if (n > size_t(MPI_MAX_INFO_VAL))
        return INFO_ERR(MPI_ERR_INFO_VALUE, "value of key \"%s\" has %zu characters, more than "
                                            "MPI_MAX_INFO_VAL (%d)", key, n, MPI_MAX_INFO_VAL);
    for (auto& kv : o->pairs) {
        if (kv.first == key) {
            kv.second = value;  // keeps its place in the key order
            return MPI_SUCCESS;
        }
    }
    o->pairs.emplace_back(key, value);
    return MPI_SUCCESS;
}

int Info_delete(MPI_Info info, const char* key) {
    int err = MPI_SUCCESS;
    InfoObj* o = get_mutable(info, &err);
    if (!o) return err;
    if (!key_ok(key, &err)) return err;
    for (auto it = o->pairs.begin(); it != o->pairs.end(); ++it) {
        if (it->first == key) {
            o->pairs.erase(it);
            return MPI_SUCCESS;
        }
    }
    return INFO_ERR(MPI_ERR_INFO_NOKEY, "key \"%s\" is not in info 0x%x", key, unsigned(info));
}

int Info_get(MPI_Info info, const char* key, int valuelen, char* value, int* flag) {
    int err = MPI_SUCCESS;
    InfoObj* o = get_info(info, &err);
    if (!o) return err;
    if (!key_ok(key, &err)) return err;
    if (valuelen < 0) return INFO_ERR(MPI_ERR_ARG, "valuelen %d is negative", valuelen);
    if (!flag) return INFO_ERR(MPI_ERR_ARG, "flag is NULL");
    const std::string* v = find(o, key);
    *flag = v != nullptr;
    if (!v) return MPI_SUCCESS;
    if (!value) return INFO_ERR(MPI_ERR_ARG, "value is NULL");
    // MPI: at most valuelen characters, then the terminating null (value has valuelen + 1).
    size_t n = std::min(v->size(), size_t(valuelen));
    std::memcpy(value, v->data(), n);
    value[n] = '\0';
    return MPI_SUCCESS;
}

int Info_get_valuelen(MPI_Info info, const char* key, int* valuelen, int* flag) {
    int err = MPI_SUCCESS;
    InfoObj* o = get_info(info, &err);
    if (!o) return err;
    if (!key_ok(key, &err)) return err;
    if (!valuelen || !flag) return INFO_ERR(MPI_ERR_ARG, "valuelen or flag is NULL");
    const std::string* v = find(o, key);
    *flag = v != nullptr;
    if (v) *valuelen = int(v->size());
    return MPI_SUCCESS;
}

int Info_get_string(MPI_Info info, const char* key, int* buflen, char* value, int* flag) {
    int err = MPI_SUCCESS;
    InfoObj* o = get_info(info, &err);
    if (!o) return err;
    if (!key_ok(key, &err)) return err;
    if (!buflen || !flag) return INFO_ERR(MPI_ERR_ARG, "buflen or flag is NULL");
    if (*buflen < 0) return INFO_ERR(MPI_ERR_ARG, "buflen %d is negative", *buflen);
    const std::string* v = find(o, key);
    *flag = v != nullptr;
    if (!v) return MPI_SUCCESS;  // value and buflen unchanged
    // MPI 4.0 §10.2: copies up to buflen - 1 characters and a null; buflen becomes the size
    // the whole value needs (its length + 1). buflen 0 only asks for that size.
    if (*buflen > 0) {
        if (!value) return INFO_ERR(MPI_ERR_ARG, "value is NULL");
        size_t n = std::min(v->size(), size_t(*buflen - 1));
        std::memcpy(value, v->data(), n);
        value[n] = '\0';
    }
    *buflen = int(v->size()) + 1;
    return MPI_SUCCESS;
}

int Info_get_nkeys(MPI_Info info, int* nkeys) {
    int err = MPI_SUCCESS;
    InfoObj* o = get_info(info, &err);
    if (!o) return err;
    if (!nkeys) return INFO_ERR(MPI_ERR_ARG, "nkeys is NULL");
    *nkeys = int(o->pairs.size());
    return MPI_SUCCESS;
}

int Info_get_nthkey(MPI_Info info, int n, char* key) {
    int err = MPI_SUCCESS;
    InfoObj* o = get_info(info, &err);
    if (!o) return err;
    if (n < 0 || size_t(n) >= o->pairs.size())
        return INFO_ERR(MPI_ERR_ARG, "key number %d out of range: info 0x%x has %zu keys", n,
                        unsigned(info), o->pairs.size());
    if (!key) return INFO_ERR(MPI_ERR_ARG, "key is NULL");
    const std::string& k = o->pairs[size_t(n)].first;
    std::memcpy(key, k.c_str(), k.size() + 1);  // keys are <= MPI_MAX_INFO_KEY
    return MPI_SUCCESS;
}

int Info_dup(MPI_Info info, MPI_Info* newinfo) {
    int err = MPI_SUCCESS;
    InfoObj* o = get_info(info, &err);
    if (!o) return err;
    if (!newinfo) return INFO_ERR(MPI_ERR_ARG, "newinfo is NULL");
    *newinfo = new_obj(o->pairs);
    return MPI_SUCCESS;
}

int Info_free(MPI_Info* info) {
    if (!info) return INFO_ERR(MPI_ERR_ARG, "info is NULL");
    int err = MPI_SUCCESS;
    if (!get_mutable(*info, &err)) return err;
    uint32_t idx = uint32_t(*info) & 0xffffffu;
    auto& t = table();
    t.objs[idx].reset();
    t.free_list.push_back(idx);
    *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}

int Info_create_env(int argc, char* argv[], MPI_Info* info) {
    if (!info) return INFO_ERR(MPI_ERR_ARG, "info is NULL");
    *info = new_obj(env_pairs(argc, argv, false, false));
    return MPI_SUCCESS;
}

MPI_Fint Info_c2f(MPI_Info info) { return MPI_Fint(info); }
MPI_Info Info_f2c(MPI_Fint info) { return MPI_Info(info); }

}  // namespace wanmpi::impl
