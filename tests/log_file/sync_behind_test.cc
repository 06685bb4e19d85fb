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
#include <thread>
#include <vector>

#include "sluice/base/detail/syscalls.h"
#include "sluice/fs/write_stream.h"
#include "sluice/log_file/log_options.h"
#include "sluice/log_file/log_worker.h"
#include "sluice/loop/loop.h"
#include "support/spin.h"
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

// Two syncs overlap: the first begun fails only after the second returned
// 0. The second's mark covers the first's bytes, whose loss the first
// reports (Linux tells a writeback error once per description, so the
// second may not have seen it): synced() must not move to the second's
// mark, and the watch hears the error.
std::atomic<int> calls{0};
std::atomic<bool> later_returned{false};

int hook_first_fails_last(int fd) {
  if (calls.fetch_add(1) == 0) {
    for (int i = 0; i < 5000 && !later_returned.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    errno = EIO;
    return -1;
  }
  const int r = detail::real_syscalls.fdatasync(fd);
  later_returned = true;
  return r;
}

TEST_CASE("sync_behind: a sync that fails after a later one returned keeps synced() before both") {
  temp_dir tmp;
  const std::string path = (std::filesystem::path(tmp.path) / "app.log").string();
  detail::syscall_table t = detail::real_syscalls;
  t.fdatasync = &hook_first_fails_last;
  const detail::syscall_table old = detail::swap_syscalls(t);
  calls = 0;
  later_returned = false;
  loop& lp = loop::current();
  {
    log_worker worker(path, behind());
    auto out = make_worker_writable(worker);
    std::uint64_t most = 0;
    std::error_code failed;
    auto watch = worker.watch_syncs(lp, [&](std::uint64_t synced, std::error_code ec) {
      most = std::max(most, synced);
      if (ec) failed = ec;
    });
    REQUIRE(watch);
    int called = 0;
    const write_cb landed = [&](std::error_code ec) {
      CHECK(!ec);  // written: what the sync says comes through the watch
      ++called;
    };
    out->write("the first sync's line\n", landed.copy());
    REQUIRE(spin(lp, [&] { return calls.load() >= 1; }));
    out->write("the second sync's line\n", landed.copy());
    REQUIRE(spin(lp, [&] { return bool(failed); }));
    CHECK(calls.load() >= 2);
    CHECK(later_returned.load());
    CHECK(failed == std::errc::io_error);
    CHECK(most == 0);
    CHECK(worker.synced() == 0);
    CHECK(called == 2);
    watch.reset();
    out.reset();
    worker.close();
  }
  detail::swap_syscalls(old);
}

}  // namespace
}  // namespace sluice::test
