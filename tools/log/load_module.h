// A module of sluice-log's, loaded only when a DEST needs it: beside the
// program in the build tree, else where it is installed (`installed`, from
// $ORIGIN, the program's directory, as its RUNPATH). It stays loaded to the
// exit.
#pragma once

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <string>

namespace sluice_tools {

// The address of `symbol` in module `file` (e.g. "sluice-log-tls.so"), or
// null with dlopen()'s reason in `why`.
inline void* load_module_symbol(const std::string& file, const std::string& installed_path, const char* symbol,
                                std::string& why) {
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : std::string("./sluice-log");
  dir.erase(dir.rfind('/'));
  std::string installed = installed_path;
  if (installed.rfind("$ORIGIN", 0) == 0) installed.replace(0, 7, dir);
  for (const std::string& path : {dir + "/" + file, installed}) {
    void* module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module) {
      why = ::dlerror();
      continue;
    }
    if (void* f = ::dlsym(module, symbol)) return f;
    why = path + ": no " + symbol;
  }
  return nullptr;
}

}  // namespace sluice_tools
