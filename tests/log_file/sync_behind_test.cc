// log_options::sync_behind: a log_worker whose syncs follow the writes on
// threads of their own. synced() (what sluice-logd --fsync ack answers by)
// never passes what the file held when a sync that has returned began.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sluice/base/detail/syscalls.h"
#include "sluice/fs/write_stream.h"
#include "sluice/log_file/log_options.h"
#include "sluice/log_file/log_worker.h"
#include "sluice/loop/loop.h"
#include "support/temp_dir.h"

namespace sluice::test {
namespace {

// The most bytes a file held as a fdatasync began, over those that have returned.
std::atomic<std::uint64_t> covered{0};
std::atomic<int> syncs{0};

int hook_fdatasync(int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  const int r = detail::real_syscalls.fdatasync(fd);
  if (r == 0) {
    std::uint64_t seen = covered.load();
    while (seen < static_cast<std::uint64_t>(st.st_size) && !covered.compare_exchange_weak(seen, st.st_size)) {
    }
    ++syncs;
  }
  return r;
}

log_options behind() {
  log_options o;
  o.fsync = log_options::fsync_policy::every_bytes;
  o.fsync_bytes = 0;
  o.sync_behind = true;
  return o;
}

TEST_CASE("sync_behind: synced() never passes what a returned sync began with, and each line is answered after one") {
  temp_dir tmp;
  const std::string path = (std::filesystem::path(tmp.path) / "app.log").string();
  detail::syscall_table t = detail::real_syscalls;
  t.fdatasync = &hook_fdatasync;
  const detail::syscall_table old = detail::swap_syscalls(t);
  covered = 0;
  syncs = 0;
  loop& lp = loop::current();
  constexpr int lines = 20'000;
  std::vector<std::uint64_t> position(lines, 0);
  int written = 0, answered = 0;
  bool held = false, bad = false;
  {
    log_worker worker(path, behind());
    auto out = make_worker_writable(worker);
    worker_sink& sink = out->get_sink();
    const auto answer = [&](std::uint64_t synced) {
      // The single file is never rotated: its size is the byte count.
      if (synced > covered.load()) bad = true;
      while (answered < written && position[answered] <= synced) ++answered;
      if (held && answered == lines) {
        held = false;
        lp.release();
      }
    };
    auto watch = worker.watch_syncs(lp, [&](std::uint64_t synced, std::error_code ec) {
      REQUIRE(!ec);
      answer(synced);
    });
    REQUIRE(watch);
    lp.hold();
    held = true;
    // Bursts of writes, each burst a turn: rounds are written while syncs run.
    for (int i = 0; i < lines;) {
      for (int k = 0; k < 50 && i < lines; ++k, ++i)
        out->write("line " + std::to_string(i) + " of the sync_behind test, padded to some length\n",
                   [&, i](std::error_code ec) {
                     REQUIRE(!ec);
                     position[i] = sink.position();
                     REQUIRE(written == i);
                     written = i + 1;
                     answer(worker.synced());  // its sync may have been told before
                   });
      lp.run_once(std::chrono::milliseconds(1));
    }
    lp.run();
    CHECK(!bad);
    CHECK(answered == lines);
    CHECK(worker.synced() == static_cast<std::uint64_t>(std::filesystem::file_size(path)));
    CHECK(syncs.load() > 1);
    CHECK(worker.fsyncs() >= static_cast<std::size_t>(syncs.load()));
    out.reset();
    worker.close();
  }
  detail::swap_syscalls(old);
}

}  // namespace
}  // namespace sluice::test
