// Compressed rotation (log_options::compress): rotated files become
// app.log.N.gz / app.log.N.zst, compressed off the writer's path, while
// app.log stays plain; keep counts them; a crash's leftovers are finished
// or removed at the next start.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

#include "sluice/errors.h"
#include "sluice/factories.h"
#include "sluice/loop.h"
#include "sluice/sinks/log_options.h"
#include "support/temp_dir.h"

namespace sluice::test {
namespace {

using compression = log_options::compression;

std::string sh(const std::string& cmd) {
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  CHECK(::pclose(p) == 0);
  return out;
}

bool exists(const std::string& p) { return std::filesystem::exists(std::filesystem::symlink_status(p)); }

std::string lines(int from, int to) {
  std::string s;
  for (int i = from; i < to; ++i) s += "2026-12-02T01:00:00Z host app: request " + std::to_string(i) + " done\n";
  return s;
}

const char* tool(compression c) { return c == compression::gzip ? "gzip -dc < " : "zstd -qdc < "; }
const char* suffix(compression c) { return c == compression::gzip ? ".gz" : ".zst"; }

// Writes `text` a line at a time to a rotated log; every write called back
// once, with success. Returns when the log is closed, its compressor done.
void write_log(const std::string& path, const log_options& o, const std::string& text) {
  int calls = 0, writes = 0, failures = 0;
  {
    auto w = make_log_writable(path, o);
    std::size_t off = 0;
    while (off < text.size()) {
      const std::size_t nl = text.find('\n', off);
      ++writes;
      w->write(std::string_view(text).substr(off, nl + 1 - off), [&](std::error_code ec) {
        ++calls;
        if (ec) ++failures;
      });
      off = nl + 1;
    }
    w->end();
    loop::current().run_until_idle();
  }
  CHECK(calls == writes);
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("compressed rotation: rotated files are FILE.N.gz / FILE.N.zst, the live FILE plain; oldest first then FILE gives the input") {
  for (compression c : {compression::gzip, compression::zstd}) {
    CAPTURE(static_cast<int>(c));
    temp_dir dir;
    const std::string path = dir.file("app.log");
    const std::string text = lines(0, 30000);
    write_log(path, {.max_size = 64 * 1024, .keep = 100, .compress = c}, text);
    int n = 0;
    while (exists(path + "." + std::to_string(n + 1) + suffix(c))) ++n;
    CHECK(n >= 20);
    std::string all;
    std::uint64_t packed = 0;
    for (int i = n; i >= 1; --i) {
      const std::string f = path + "." + std::to_string(i);
      CHECK(!exists(f));  // the plain file is gone once compressed
      all += sh(std::string(tool(c)) + f + suffix(c));
      packed += std::filesystem::file_size(f + suffix(c));
    }
    CHECK(!exists(path + "." + std::to_string(n + 1)));
    CHECK(!exists(path + suffix(c) + ".tmp"));
    all += slurp(path);  // plain
    CHECK(all.size() == text.size());
    CHECK((all == text));
    CHECK(packed < (text.size() - std::filesystem::file_size(path)) * 3 / 10);
  }
}

TEST_CASE("compressed rotation: --keep counts compressed files; the oldest go") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  const std::string text = lines(0, 20000);
  write_log(path, {.max_size = 32 * 1024, .keep = 3, .compress = compression::gzip}, text);
  CHECK(exists(path + ".1.gz"));
  CHECK(exists(path + ".3.gz"));
  CHECK(!exists(path + ".4.gz"));
  CHECK(!exists(path + ".4"));
  for (int i = 1; i <= 3; ++i) CHECK(!exists(path + "." + std::to_string(i)));
  // The three newest, then FILE: the input's tail.
  const std::string tail = sh("gzip -dc < " + path + ".3.gz") + sh("gzip -dc < " + path + ".2.gz") +
                           sh("gzip -dc < " + path + ".1.gz") + slurp(path);
  REQUIRE(tail.size() < text.size());
  CHECK((text.compare(text.size() - tail.size(), tail.size(), tail) == 0));
}

TEST_CASE("compressed rotation: the next start removes a half-written temporary, a plain file whose compressed twin is whole, and compresses the rest") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  // What a crash can leave: a temporary cut short (before its rename), a
  // plain file beside its renamed compressed twin (before the unlink), and
  // a plain file not yet reached.
  spit(path + ".gz.tmp", "\x1f\x8b half");
  spit(path + ".1", lines(200, 300));
  spit(path + ".1.gz", sh("printf 'x' | gzip -c"));
  spit(path + ".2", lines(100, 200));
  spit(path + ".3.gz", "placeholder");
  write_log(path, {.max_size = 1 << 20, .keep = 5, .compress = compression::gzip}, lines(300, 310));
  CHECK(!exists(path + ".gz.tmp"));
  CHECK(!exists(path + ".1"));
  CHECK(sh("gzip -dc < " + path + ".1.gz") == "x");
  CHECK(!exists(path + ".2"));
  CHECK(sh("gzip -dc < " + path + ".2.gz") == lines(100, 200));
  CHECK(slurp(path + ".3.gz") == "placeholder");
  CHECK(slurp(path) == lines(300, 310));
}

TEST_CASE("compressed rotation: a compression this build lacks, or none, is said at open; keep 0 removes as before") {
  temp_dir dir;
  CHECK(log_compression_available(compression::none));
  CHECK(log_compression_available(compression::gzip));
  CHECK(log_compression_available(compression::zstd));
  const std::string path = dir.file("app.log");
  write_log(path, {.max_size = 1024, .keep = 0, .compress = compression::zstd}, lines(0, 200));
  CHECK(!exists(path + ".1"));
  CHECK(!exists(path + ".1.zst"));
}

TEST_CASE("compressed rotation: a level outside the codec's range is refused at open, not at the first rotation") {
  temp_dir dir;
  CHECK(log_compression_levels(compression::gzip).min == 1);
  CHECK(log_compression_levels(compression::gzip).max == 9);
  CHECK(log_compression_levels(compression::zstd).max == 22);
  for (const auto& [c, level] : {std::pair{compression::gzip, 10}, {compression::gzip, -1}, {compression::zstd, 23}}) {
    CAPTURE(level);
    try {
      make_log_writable(dir.file("bad.log"), {.max_size = 1024, .compress = c, .compress_level = level});
      FAIL("opened with compress_level " << level);
    } catch (const stream_error& e) {
      CHECK(e.code() == std::errc::invalid_argument);
      CHECK(std::string(e.what()).find("compress_level " + std::to_string(level)) != std::string::npos);
    }
  }
  // A level within range reaches zlib: gzip's header names the fastest (XFL 4).
  const std::string path = dir.file("fast.log");
  write_log(path, {.max_size = 1024, .keep = 5, .compress = compression::gzip, .compress_level = 1}, lines(0, 60));
  const std::string packed = slurp(path + ".1.gz");
  REQUIRE(packed.size() > 9);
  CHECK(static_cast<unsigned char>(packed[8]) == 4);
}

}  // namespace sluice::test
