// Compressed rotation (log_options::compress): rotated files become
// app.log.N.gz / app.log.N.zst, compressed off the writer's path, while
// app.log stays plain; keep counts them; a crash's leftovers are finished
// or removed at the next start, but a plain file beside a twin that is not
// its whole copy is kept (issue 34, item 2); a file that cannot be
// compressed is told and tried again (item 14).
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/log_file/log_writable.h"
#include "sluice/loop/loop.h"
#include "sluice/log_file/log_options.h"
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
  spit(path + ".1.gz", sh("gzip -c < " + path + ".1"));
  spit(path + ".2", lines(100, 200));
  spit(path + ".3.gz", "placeholder");
  write_log(path, {.max_size = 1 << 20, .keep = 5, .compress = compression::gzip}, lines(300, 310));
  CHECK(!exists(path + ".gz.tmp"));
  CHECK(!exists(path + ".1"));
  CHECK(sh("gzip -dc < " + path + ".1.gz") == lines(200, 300));
  CHECK(!exists(path + ".2"));
  CHECK(sh("gzip -dc < " + path + ".2.gz") == lines(100, 200));
  CHECK(slurp(path + ".3.gz") == "placeholder");
  CHECK(slurp(path) == lines(300, 310));
}

// Issue 34, item 2: the plain file went whenever anything was at its twin's
// name.
TEST_CASE("compressed rotation: the next start keeps a plain file whose twin is not a whole copy of it, and says so") {
  for (compression c : {compression::gzip, compression::zstd}) {
    CAPTURE(static_cast<int>(c));
    temp_dir dir;
    const std::string path = dir.file("app.log");
    const std::string z = c == compression::gzip ? "gzip -c" : "zstd -qc";
    const std::string sfx = suffix(c);
    // Beside FILE.N, FILE.N.gz is 1: an older compressed file; 2: an empty
    // file; 3: a copy cut short;
    // 4: a directory; 5: a dangling symbolic link; 6: a copy with a byte
    // more; 7: a link to a whole copy; 8: a whole copy (the crash case);
    // 9: a whole copy with bytes after it.
    for (int i = 1; i <= 9; ++i) spit(path + "." + std::to_string(i), lines(i * 100, i * 100 + 100));
    spit(path + ".1" + sfx, sh("printf 'older\n' | " + z));
    spit(path + ".2" + sfx, "");
    const std::string whole3 = sh(z + " < " + path + ".3");
    spit(path + ".3" + sfx, whole3.substr(0, whole3.size() - 3));
    std::filesystem::create_directory(path + ".4" + sfx);
    std::filesystem::create_symlink(dir.file("nowhere"), path + ".5" + sfx);
    spit(path + ".6" + sfx, sh("{ cat " + path + ".6; printf x; } | " + z));
    spit(dir.file("copy7"), sh(z + " < " + path + ".7"));
    std::filesystem::create_symlink(dir.file("copy7"), path + ".7" + sfx);
    spit(path + ".8" + sfx, sh(z + " < " + path + ".8"));
    spit(path + ".9" + sfx, sh(z + " < " + path + ".9") + "trailing\n");
    std::vector<std::string> told;
    log_options o{.max_size = 1 << 20, .keep = 10, .compress = c};
    o.on_compress_problem = [&](const log_options::compress_problem& p) {
      CHECK(p.bad_twin);
      told.push_back(p.file);
    };
    write_log(path, o, lines(0, 10));
    // 1 to 7 and 9 stay as they were, the plain file and its twin; 8's
    // plain file went, its whole copy stays.
    for (int i : {1, 2, 3, 4, 5, 6, 7, 9}) {
      CAPTURE(i);
      CHECK(slurp(path + "." + std::to_string(i)) == lines(i * 100, i * 100 + 100));
    }
    CHECK(sh(std::string(tool(c)) + path + ".1" + sfx) == "older\n");
    CHECK(slurp(path + ".2" + sfx).empty());
    CHECK(slurp(path + ".3" + sfx) == whole3.substr(0, whole3.size() - 3));
    CHECK(std::filesystem::is_directory(path + ".4" + sfx));
    CHECK(std::filesystem::is_symlink(path + ".5" + sfx));
    CHECK(std::filesystem::is_symlink(path + ".7" + sfx));
    CHECK(sh(std::string(tool(c)) + dir.file("copy7")) == lines(700, 800));  // not written through the link
    CHECK(!exists(path + ".8"));
    CHECK(sh(std::string(tool(c)) + path + ".8" + sfx) == lines(800, 900));
    CHECK(exists(path + ".9" + sfx));
    std::sort(told.begin(), told.end());
    CHECK(told == std::vector<std::string>{path + ".1", path + ".2", path + ".3", path + ".4", path + ".5", path + ".6",
                                          path + ".7", path + ".9"});
  }
}

// Issue 34, item 2, as found: a log rotated with compression, then without
// (FILE.N plain beside older FILE.N.gz), then with it again.
TEST_CASE("compressed rotation: compressed, then plain, then compressed again: every line is kept") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  const log_options packed{.max_size = 16 * 1024, .keep = 1000, .compress = compression::gzip};
  const log_options plain{.max_size = 16 * 1024, .keep = 1000};
  write_log(path, packed, lines(0, 10000));
  write_log(path, plain, lines(10000, 20000));
  write_log(path, packed, lines(20000, 30000));
  // Every line once, wherever it is.
  std::vector<std::string> got;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    const std::string f = e.path().string();
    const std::string text = f.ends_with(".gz") ? sh("gzip -dc < " + f) : slurp(f);
    std::size_t off = 0;
    while (off < text.size()) {
      const std::size_t nl = text.find('\n', off);
      got.push_back(text.substr(off, nl + 1 - off));
      off = nl + 1;
    }
  }
  std::sort(got.begin(), got.end());
  CHECK(std::adjacent_find(got.begin(), got.end()) == got.end());
  CHECK(got.size() == 30000);
}

// Issue 34, item 14: such a file stayed plain without a word, and for good.
TEST_CASE("compressed rotation: a rotated file that cannot be compressed is told, and tried again until it is") {
  temp_dir dir;
  const std::string path = dir.file("app.log");
  std::filesystem::create_directory(path + ".gz.tmp");  // the temporary cannot be created
  std::mutex m;
  std::vector<log_options::compress_problem> told;
  log_options o{.max_size = 8 * 1024, .keep = 100, .compress = compression::gzip};
  o.on_compress_problem = [&](const log_options::compress_problem& p) {
    std::lock_guard lock(m);
    told.push_back(p);
  };
  const auto plain_left = [&] {
    int n = 0;
    for (int i = 1; i <= 100; ++i) n += exists(path + "." + std::to_string(i));
    return n;
  };
  const auto told_count = [&] {
    std::lock_guard lock(m);
    return told.size();
  };
  int calls = 0;
  {
    auto w = make_log_writable(path, o);
    const std::string text = lines(0, 2000);
    for (std::size_t off = 0; off < text.size();) {
      const std::size_t nl = text.find('\n', off);
      w->write(std::string_view(text).substr(off, nl + 1 - off), [&](std::error_code ec) {
        CHECK(!ec);
        ++calls;
      });
      off = nl + 1;
    }
    loop::current().run_until_idle();
    for (int i = 0; i < 500 && told_count() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(told_count() > 0);
    {
      std::lock_guard lock(m);
      CHECK(told[0].error == std::errc::is_a_directory);
      CHECK(!told[0].bad_twin);
      CHECK(told[0].file.starts_with(path + "."));
    }
    CHECK(plain_left() > 0);
    std::filesystem::remove(path + ".gz.tmp");
    // Tried again 1 s after the first failure, then 2 s...: within 10 s.
    for (int i = 0; i < 1000 && plain_left() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(plain_left() == 0);
    w->end();
    loop::current().run_until_idle();
  }
  CHECK(calls == 2000);
  std::string all;
  int n = 0;
  while (exists(path + "." + std::to_string(n + 1) + ".gz")) ++n;
  for (int i = n; i >= 1; --i) all += sh("gzip -dc < " + path + "." + std::to_string(i) + ".gz");
  all += slurp(path);
  CHECK((all == lines(0, 2000)));
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
