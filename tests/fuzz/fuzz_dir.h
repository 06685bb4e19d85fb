// fuzz_dir: the temporary directory a fuzzer's runs share, made at the first
// call and removed at exit (libFuzzer runs the harness in one process).
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace sluice::fuzz {

/// TMPDIR/<prefix>-XXXXXX, made once; aborts when it cannot be made.
inline const std::string& fuzz_dir(const char* prefix) {
  // Never destroyed: the atexit() below runs after static destructors.
  static const std::string& path = *new std::string([prefix] {
    std::string tmpl = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    });
    return tmpl;
  }());
  return path;
}

}  // namespace sluice::fuzz
