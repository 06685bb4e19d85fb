// temp_dir, temp_file, slurp, spit: the files tests write and read back.
#pragma once

#include <doctest/doctest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

namespace sluice::test {

/// A fresh directory, removed with its files at the end of the test.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// The whole file, or "" if it cannot be read.
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Replaces the file's contents with `data`.
inline void spit(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

/// A file named "data" holding `content`, in a fresh directory removed with
/// it at the end of the test.
struct temp_file {
  temp_dir tmp;
  std::filesystem::path dir = tmp.path;
  std::filesystem::path path = tmp.path / "data";
  explicit temp_file(const std::string& content) { spit(path.string(), content); }
};

}  // namespace sluice::test
