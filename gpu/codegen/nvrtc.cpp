#include "gpu/codegen/nvrtc.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

namespace toysim::gpu {

namespace {

namespace fs = std::filesystem;

// The NVRTC C API in plain C types, so no CUDA header is needed: nvrtcProgram is an opaque
// pointer, nvrtcResult an int enum (NVRTC_SUCCESS = 0).
using Program = void*;
constexpr int kSuccess = 0;

struct Api {
    int (*nvrtcVersion)(int* major, int* minor) = nullptr;
    int (*nvrtcCreateProgram)(Program* prog, const char* src, const char* name, int num_headers,
                              const char* const* headers, const char* const* include_names) = nullptr;
    int (*nvrtcCompileProgram)(Program prog, int num_options, const char* const* options) = nullptr;
    int (*nvrtcGetProgramLogSize)(Program prog, std::size_t* size) = nullptr;
    int (*nvrtcGetProgramLog)(Program prog, char* log) = nullptr;
    int (*nvrtcGetCUBINSize)(Program prog, std::size_t* size) = nullptr;
    int (*nvrtcGetCUBIN)(Program prog, char* cubin) = nullptr;
    int (*nvrtcDestroyProgram)(Program* prog) = nullptr;
    const char* (*nvrtcGetErrorString)(int result) = nullptr;
};

#define TOYSIM_NVRTC_FUNCTIONS(X)                                                                       \
    X(nvrtcVersion) X(nvrtcCreateProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize)               \
    X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcDestroyProgram) X(nvrtcGetErrorString)

// libnvrtc, opened once (the only global here): the handle and its functions, or why not.
struct Library {
    void* handle = nullptr;
    Api api;
    std::string path;     // the file dlopen found (from the link map), or the name it was given
    std::string version;  // "13.0"
    std::string why_not;  // non-empty when unavailable
};

std::vector<std::string> library_candidates() {
    std::vector<std::string> names;
#if defined(TOYSIM_NVRTC_LIBRARY_DIR)
    for (const char* file : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
        names.push_back(std::string(TOYSIM_NVRTC_LIBRARY_DIR) + "/" + file);
#endif
    for (const char* file : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) names.emplace_back(file);
    return names;
}

Library open_library() {
    Library lib;
    std::string tried, first_error;
    for (const std::string& name : library_candidates()) {
        tried += (tried.empty() ? "" : ", ") + name;
        lib.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib.handle) {
            lib.path = name;
            break;
        }
        if (first_error.empty()) {
            const char* e = dlerror();
            first_error = e ? e : "not found";
        }
    }
    if (!lib.handle) {
        lib.why_not = fmt::format("cannot load NVRTC (libnvrtc, part of the CUDA Toolkit); tried {} ({}): install the toolkit "
                                  "or add its lib64 to LD_LIBRARY_PATH",
                                  tried, first_error);
        return lib;
    }
    link_map* map = nullptr;
    if (dlinfo(lib.handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) lib.path = map->l_name;
#define TOYSIM_NVRTC_RESOLVE(fn)                                                                        \
    lib.api.fn = reinterpret_cast<decltype(lib.api.fn)>(dlsym(lib.handle, #fn));                         \
    if (!lib.api.fn) {                                                                                   \
        lib.why_not = fmt::format("the NVRTC library found ({}) has no " #fn " (older than CUDA 11.1?)", lib.path); \
        return lib;                                                                                      \
    }
    TOYSIM_NVRTC_FUNCTIONS(TOYSIM_NVRTC_RESOLVE)
#undef TOYSIM_NVRTC_RESOLVE
    int major = 0, minor = 0;
    if (lib.api.nvrtcVersion(&major, &minor) != kSuccess) {
        lib.why_not = fmt::format("the NVRTC library found ({}) does not report its version", lib.path);
        return lib;
    }
    lib.version = fmt::format("{}.{}", major, minor);
    return lib;
}

const Library& library() {
    static const Library lib = open_library();  // initialized once, thread-safely
    return lib;
}

const Api& api_or_throw() {
    const Library& lib = library();
    if (!lib.why_not.empty()) throw GpuError{lib.why_not};
    return lib.api;
}

std::string error_text(const Api& api, int result) {
    const char* text = api.nvrtcGetErrorString ? api.nvrtcGetErrorString(result) : nullptr;
    return text && *text ? std::string(text) : fmt::format("NVRTC error {}", result);
}

// The toolkit's include directory, where cuda_fp16.h and cuda_bf16.h are: NVRTC 13.0 has no
// built-in copy and no default search path ("could not open source file "cuda_fp16.h" (no
// directories in search list)"). The one CMake found, else the one beside the library loaded
// (<root>/lib64/libnvrtc.so.13 -> <root>/include), else /usr/local/cuda/include.
std::string cuda_include_dir() {
    std::vector<fs::path> candidates;
#if defined(TOYSIM_CUDA_INCLUDE_DIR)
    candidates.emplace_back(TOYSIM_CUDA_INCLUDE_DIR);
#endif
    const fs::path lib = library().path;
    if (lib.is_absolute()) candidates.push_back(lib.parent_path().parent_path() / "include");
    candidates.emplace_back("/usr/local/cuda/include");
    for (const fs::path& dir : candidates) {
        std::error_code ec;
        if (!dir.empty() && fs::exists(dir / "cuda_fp16.h", ec)) return dir.string();
    }
    return {};
}

// ---- the disk cache ----

bool cache_disabled() { return env_flag("TOYSIM_NO_CACHE"); }

// $XDG_CACHE_HOME/toysim, else $HOME/.cache/toysim; empty when neither is set (a relative
// XDG_CACHE_HOME is ignored, as the XDG spec says).
fs::path cache_dir() {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && fs::path(xdg).is_absolute())
        return fs::path(xdg) / "toysim";
    if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "toysim";
    return {};
}

// 64-bit FNV-1a.
struct Fnv1a {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    void add(std::string_view bytes) {
        for (unsigned char c : bytes) {
            h ^= c;
            h *= 0x100000001b3ULL;
        }
    }
    void add_field(std::string_view bytes) {  // with a '\0' after it, so fields cannot run together
        add(bytes);
        add(std::string_view("\0", 1));
    }
};

bool is_elf(const std::string& image) { return image.size() >= 4 && image.compare(0, 4, "\x7f" "ELF") == 0; }

// The cached image, or nothing when the file is missing, unreadable or not an ELF file.
std::optional<std::string> read_cache(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return std::nullopt;
    std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad() || !is_elf(image)) return std::nullopt;
    return image;
}

// Writes a temporary file beside `file`, then renames it over `file`, so a reader sees the whole
// image or none. Any failure leaves no file behind and is otherwise ignored.
void write_cache(const fs::path& file, const std::string& image) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (ec) return;
    std::string tmp = file.string() + ".tmp.XXXXXX";
    const int fd = mkstemp(tmp.data());
    if (fd < 0) return;
    bool ok = true;
    std::size_t done = 0;
    while (ok && done < image.size()) {
        const ssize_t n = ::write(fd, image.data() + done, image.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) ok = false;
        else done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) ok = false;
    if (!ok || std::rename(tmp.c_str(), file.c_str()) != 0) ::unlink(tmp.c_str());
}

// Destroys the program however the compile ends.
struct ProgramGuard {
    const Api& api;
    Program prog = nullptr;
    ~ProgramGuard() {
        if (prog) api.nvrtcDestroyProgram(&prog);
    }
};

std::string program_log(const Api& api, Program prog) {
    std::size_t size = 0;
    if (api.nvrtcGetProgramLogSize(prog, &size) != kSuccess || size == 0) return {};
    std::string log(size, '\0');
    if (api.nvrtcGetProgramLog(prog, log.data()) != kSuccess) return {};
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
    return log;
}

}  // namespace

bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::string_view(v) != "0";
}

NvrtcCompileError::NvrtcCompileError(const std::string& name, std::string log_, const std::string& reason)
    : GpuError("NVRTC could not compile " + name + ":" + (log_.empty() ? (reason.empty() ? "" : " " + reason) : "\n" + log_)),
      log(std::move(log_)) {}

bool nvrtc_available(std::string* why) {
    const Library& lib = library();
    if (why) *why = lib.why_not;
    return lib.why_not.empty();
}

std::string nvrtc_version() {
    const Library& lib = library();
    return lib.why_not.empty() ? lib.version : std::string();
}

NvrtcCompiled nvrtc_compile(const std::string& source, const std::string& name, int arch,
                            const std::vector<std::string>& options, bool arch_specific) {
    const Api& api = api_or_throw();
    if (arch <= 0) throw GpuError{fmt::format("NVRTC: no GPU architecture sm_{} (give 90 for sm_90)", arch)};

    // The architecture first, the caller's options next, the toolkit's headers last (so a
    // caller's -I is searched before them).
    std::vector<std::string> all = {fmt::format("--gpu-architecture=sm_{}{}", arch, arch_specific ? "a" : "")};
    all.insert(all.end(), options.begin(), options.end());
    if (const std::string include = cuda_include_dir(); !include.empty()) all.push_back("-I" + include);

    NvrtcCompiled out;
    out.target = fmt::format("sm_{}{}", arch, arch_specific ? "a" : "");
    fs::path file;
    if (!cache_disabled()) {
        if (const fs::path dir = cache_dir(); !dir.empty()) {
            Fnv1a h;
            h.add_field(source);
            for (const std::string& o : all) h.add_field(o);
            h.add_field(fmt::format("sm_{}", arch));
            h.add_field(library().version);
            file = dir / fmt::format("{:016x}.cubin", h.h);
            out.cache_file = file.string();
            if (auto image = read_cache(file)) {
                out.image = std::move(*image);
                out.from_cache = true;
                return out;
            }
        }
    }

    ProgramGuard guard{api};
    if (int r = api.nvrtcCreateProgram(&guard.prog, source.c_str(), name.c_str(), 0, nullptr, nullptr); r != kSuccess) {
        guard.prog = nullptr;
        throw GpuError{fmt::format("NVRTC could not create a program for {}: {}", name, error_text(api, r))};
    }
    std::vector<const char*> argv;
    argv.reserve(all.size());
    for (const std::string& o : all) argv.push_back(o.c_str());
    const int compiled = api.nvrtcCompileProgram(guard.prog, static_cast<int>(argv.size()), argv.data());
    out.log = program_log(api, guard.prog);
    if (compiled != kSuccess) {
        // NVRTC_ERROR_COMPILATION has the reasons in the log; an invalid option may leave it empty.
        throw NvrtcCompileError(name, out.log, error_text(api, compiled));
    }
    std::size_t size = 0;
    if (int r = api.nvrtcGetCUBINSize(guard.prog, &size); r != kSuccess || size == 0)
        throw GpuError{fmt::format("NVRTC compiled {} but gave no cubin: {}", name, r != kSuccess ? error_text(api, r) : "empty")};
    out.image.assign(size, '\0');
    if (int r = api.nvrtcGetCUBIN(guard.prog, out.image.data()); r != kSuccess)
        throw GpuError{fmt::format("NVRTC compiled {} but could not return the cubin: {}", name, error_text(api, r))};
    if (!file.empty()) write_cache(file, out.image);
    return out;
}

// An ELF64 little-endian cubin: the section headers, the symbol table's names, and the
// .nv.info section's attributes (each a format byte, an attribute byte, then for EIFMT_SVAL a
// 16-bit size and that many bytes; else 2 bytes): EIATTR_REGCOUNT (0x2f) and
// EIATTR_FRAME_SIZE (0x11) are a symbol's index and its count. Every offset is checked
// against the image.
std::optional<CubinResources> cubin_resources(const std::string& image, const std::string& function) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(image.data());
    const std::size_t size = image.size();
    auto read = [&](std::size_t at, std::size_t width) -> std::optional<std::uint64_t> {
        if (at > size || width > size - at) return std::nullopt;
        std::uint64_t v = 0;
        for (std::size_t i = 0; i < width; ++i) v |= std::uint64_t{bytes[at + i]} << (8 * i);
        return v;
    };
    if (size < 64 || image.compare(0, 4, "\x7f" "ELF") != 0 || bytes[4] != 2 || bytes[5] != 1) return std::nullopt;
    const auto shoff = read(0x28, 8), shentsize = read(0x3A, 2), shnum = read(0x3C, 2), shstrndx = read(0x3E, 2);
    if (!shoff || !shentsize || !shnum || !shstrndx || *shentsize < 64) return std::nullopt;
    struct Section {
        std::uint64_t name = 0, type = 0, offset = 0, size = 0, link = 0, entsize = 0;
    };
    std::vector<Section> sections;
    for (std::uint64_t i = 0; i < *shnum; ++i) {
        const std::size_t at = *shoff + i * *shentsize;
        const auto name = read(at, 4), type = read(at + 4, 4), offset = read(at + 24, 8), bytes_of = read(at + 32, 8), link = read(at + 40, 4),
                   entsize = read(at + 56, 8);
        if (!name || !type || !offset || !bytes_of || !link || !entsize) return std::nullopt;
        if (*offset > size || *bytes_of > size - *offset) return std::nullopt;
        sections.push_back({*name, *type, *offset, *bytes_of, *link, *entsize});
    }
    auto text = [&](const Section& table, std::uint64_t at) -> std::string_view {
        if (at >= table.size) return {};
        const char* start = image.data() + table.offset + at;
        const std::size_t room = table.size - at;
        return std::string_view(start, strnlen(start, room));
    };
    if (*shstrndx >= sections.size()) return std::nullopt;
    constexpr std::uint64_t kSymtab = 2;
    std::optional<std::uint64_t> symbol;
    for (const Section& s : sections) {
        if (s.type != kSymtab || s.entsize < 24 || s.link >= sections.size()) continue;
        for (std::uint64_t k = 0; k < s.size / s.entsize; ++k) {
            const auto name = read(s.offset + k * s.entsize, 4);
            if (name && text(sections[s.link], *name) == function) symbol = k;
        }
    }
    if (!symbol) return std::nullopt;
    constexpr unsigned kSval = 4, kRegcount = 0x2f, kFrameSize = 0x11;
    std::optional<CubinResources> out;
    int frame = 0;
    for (const Section& s : sections) {
        if (text(sections[*shstrndx], s.name) != ".nv.info") continue;
        for (std::size_t at = s.offset; at + 4 <= s.offset + s.size;) {
            const unsigned format = bytes[at], attribute = bytes[at + 1];
            if (format != kSval) {
                at += 4;
                continue;
            }
            const std::size_t length = static_cast<std::size_t>(*read(at + 2, 2));
            if ((attribute == kRegcount || attribute == kFrameSize) && length == 8 && at + 12 <= s.offset + s.size && *read(at + 4, 4) == *symbol) {
                const int value = static_cast<int>(*read(at + 8, 4));
                if (attribute == kRegcount) out = CubinResources{value, 0};
                else frame = value;
            }
            at += 4 + length;
        }
    }
    if (out) out->frame_bytes = frame;
    return out;
}

}  // namespace toysim::gpu
