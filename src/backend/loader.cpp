#include "backend/loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "backend/plugin.hpp"
#include "core/error.hpp"

namespace mixp {
namespace {

constexpr const char *kPluginName = "libmixp_cuda.so";

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

std::vector<std::string> candidates() {
  std::vector<std::string> c;
  if (const char *env = std::getenv("MIXP_BACKEND_PATH"); env && *env) {
    std::string p = env;
    c.push_back(is_dir(p) ? p + "/" + kPluginName : p);
  }
  std::string dir = own_dir();
  if (!dir.empty()) c.push_back(dir + "/" + kPluginName);
  return c;
}

std::mutex g_mutex;
mixp_backend_plugin_fn g_entry = nullptr;  // the plugin is never unloaded: its code backs live vtables

mixp_backend_plugin_fn load_entry() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_entry) return g_entry;
  std::string tried;
  for (const std::string &path : candidates()) {
    if (!tried.empty()) tried += "; ";
    if (!exists(path)) {
      tried += path + " (no such file)";
      continue;
    }
    dlerror();
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
      const char *e = dlerror();
      // The file is there, so a library it links (cudart, cuBLAS, cuDNN) is
      // what is missing: say so rather than "no plugin".
      fail(MIXP_ERR_DEVICE, "the CUDA backend ", path,
           " exists but cannot be loaded (is a CUDA library it needs missing? check "
           "LD_LIBRARY_PATH): ",
           e ? e : "unknown dlopen error");
    }
    dlerror();
    void *sym = dlsym(h, MIXP_BACKEND_PLUGIN_SYMBOL);
    if (!sym) {
      const char *e = dlerror();
      fail(MIXP_ERR_DEVICE, "the CUDA backend ", path, " has no entry point ",
           MIXP_BACKEND_PLUGIN_SYMBOL, " (a plugin from an incompatible mixp release?): ",
           e ? e : "symbol not found");
    }
    g_entry = reinterpret_cast<mixp_backend_plugin_fn>(sym);
    return g_entry;
  }
  fail(MIXP_ERR_DEVICE, "no CUDA backend plugin (", kPluginName,
       "): this libmixp was built without CUDA or the plugin was not installed beside it; "
       "set MIXP_BACKEND_PATH to the plugin or its directory. Tried: ",
       tried.empty() ? std::string("nothing (libmixp.so's directory is unknown)") : tried);
}

}  // namespace

std::unique_ptr<Backend> create_cuda_backend(int index, std::string *description) {
  mixp_backend_plugin_fn entry = load_entry();
  char msg[1024] = {0};
  Backend *b = nullptr;
  int st = entry(kBackendAbiVersion, index, &b, msg, sizeof msg);
  if (st != MIXP_OK || !b) {
    msg[sizeof msg - 1] = 0;
    fail(st == MIXP_ERR_OUT_OF_MEMORY ? MIXP_ERR_OUT_OF_MEMORY : MIXP_ERR_DEVICE,
         msg[0] ? msg : "the CUDA backend plugin failed without a reason");
  }
  std::unique_ptr<Backend> owned(b);
  if (description) *description = msg;
  return owned;
}

}  // namespace mixp
