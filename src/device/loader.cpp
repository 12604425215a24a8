#include "device/loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "backend/plugin.hpp"
#include "core/error.hpp"

namespace mixp {
namespace {

bool is_dir(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

// The directory libmixp.so was loaded from (the plugin is installed beside it).
std::string own_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&create_cuda_backend), &info) == 0 || !info.dli_fname)
    return {};
  std::string f = info.dli_fname;
  size_t slash = f.rfind('/');
  return slash == std::string::npos ? std::string(".") : f.substr(0, slash);
}

std::vector<std::string> candidates(const PluginSpec &spec) {
  std::vector<std::string> c;
  if (const char *env = std::getenv(spec.env); env && *env) {
    std::string p = env;
    c.push_back(is_dir(p) ? p + "/" + spec.file : p);
  }
  std::string dir = own_dir();
  if (!dir.empty()) c.push_back(dir + "/" + spec.file);
  return c;
}

std::mutex g_mutex;
// Entry points by plugin file. Plugins are never unloaded: their code backs
// live vtables.
std::map<std::string, void *> g_entries;

}  // namespace

void *load_plugin_entry(const PluginSpec &spec) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = g_entries.find(spec.file); it != g_entries.end()) return it->second;
  std::string tried;
  for (const std::string &path : candidates(spec)) {
    if (!tried.empty()) tried += "; ";
    if (!exists(path)) {
      tried += path + " (no such file)";
      continue;
    }
    dlerror();
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
      const char *e = dlerror();
      // The file is there, so a library it links is what is missing: say so
      // rather than "no plugin".
      fail(spec.status, spec.what, " ", path, " exists but cannot be loaded (", spec.load_hint,
           "): ", e ? e : "unknown dlopen error");
    }
    dlerror();
    void *sym = dlsym(h, spec.symbol);
    if (!sym) {
      const char *e = dlerror();
      fail(spec.status, spec.what, " ", path, " has no entry point ", spec.symbol,
           " (a plugin from an incompatible mixp release?): ", e ? e : "symbol not found");
    }
    g_entries.emplace(spec.file, sym);
    return sym;
  }
  fail(spec.status, "no ", spec.what, " plugin (", spec.file, "): ", spec.absent_hint, "; set ",
       spec.env, " to the plugin or its directory. Tried: ",
       tried.empty() ? std::string("nothing (libmixp.so's directory is unknown)") : tried);
}

std::string op_table_mismatch(const char *plugin_file, const OpTableIdentity &plugin,
                              const OpTableIdentity &host) {
  auto hex = [](uint64_t h) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return std::string(buf);
  };
  std::string what = plugin.op_count != host.op_count || plugin.map_count != host.map_count
                         ? "a different number of ops"
                         : "the same number of ops under other names or in another order";
  return str(plugin_file, " was built with ", plugin.op_count, " ops and ", plugin.map_count,
             " elementwise maps (op table hash ", hex(plugin.name_hash), "), libmixp.so with ",
             host.op_count, " and ", host.map_count, " (hash ", hex(host.name_hash), "): ", what,
             ", so op numbers would mean other ops; the two come from different builds of "
             "src/core/ops.def: rebuild the plugin");
}

std::unique_ptr<Backend> create_cuda_backend(int index, std::string *description) {
  static const PluginSpec spec{
      "libmixp_cuda.so", "MIXP_BACKEND_PATH", MIXP_BACKEND_PLUGIN_SYMBOL, "CUDA backend",
      "is a CUDA library it needs missing? check LD_LIBRARY_PATH",
      "this libmixp was built without CUDA or the plugin was not installed beside it",
      MIXP_ERR_DEVICE};
  auto entry = reinterpret_cast<mixp_backend_plugin_fn>(load_plugin_entry(spec));
  char msg[1024] = {0};
  Backend *b = nullptr;
  OpTableIdentity plugin_table{0, 0, 0};  // stays 0 when the ABI check refused
  int st = entry(kBackendAbiVersion, &plugin_table, index, &b, msg, sizeof msg);
  std::unique_ptr<Backend> created(st == MIXP_OK ? b : nullptr);
  if (plugin_table.op_count != 0 && !(plugin_table == kOpTableIdentity))
    fail(MIXP_ERR_DEVICE, op_table_mismatch(spec.file, plugin_table, kOpTableIdentity));
  if (st != MIXP_OK || !b) {
    msg[sizeof msg - 1] = 0;
    fail(st == MIXP_ERR_OUT_OF_MEMORY ? MIXP_ERR_OUT_OF_MEMORY : MIXP_ERR_DEVICE,
         msg[0] ? msg : "the CUDA backend plugin failed without a reason");
  }
  if (description) *description = msg;
  return created;
}

}  // namespace mixp
