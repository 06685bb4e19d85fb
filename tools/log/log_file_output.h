// sluice-log's FILE destination: a log file (rotated at --max-size, kept
// --keep times, synced as --fsync says) written by a worker thread.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>
#include <system_error>

#include "args.h"
#include "compress_problems.h"
#include "log_output.h"
#include "sluice/sluice.h"

namespace sluice_tools {

class log_file_output final : public log_output {
 public:
  // `name`: DEST as given, for messages.
  log_file_output(const std::string& file, const std::string& name, const sluice::log_options& log)
      : file_(file), name_(name), log_(log) {}
  // The writable before the worker, as the run leaves them.
  ~log_file_output() override { out_.reset(); }

  bool open() override {
    std::error_code ec;
    sluice::log_options log = log_;
    sluice_tools::say_compress_problems(log, "sluice-log");
    worker_ = sluice::log_worker::open(file_, log, ec);
    if (!worker_) {
      std::fprintf(stderr, "sluice-log: %s: %s\n", file_.c_str(), file_error(ec).c_str());
      return false;
    }
    if (log_.max_size != 0) note_if_not_rotated();
    out_ = sluice::make_worker_writable(*worker_, {.high_water_mark = 64 * 1024});
    return true;
  }

  bool network() const noexcept override { return false; }

  void reopen() override {
    if (worker_) worker_->request_reopen();
  }

  bool report(const log_counts&, const log_end& end) override {
    // Every line is written (or the file failed): the last sync and the close.
    if (const std::error_code closed = worker_->close(); closed && !end.failed) {
      std::fprintf(stderr, "sluice-log: %s: %s\n", name_.c_str(), file_error(closed).c_str());
      return false;
    }
    if (!end.failed && !end.finished) {
      // Nothing left to do and the file never finished: a bug, not a state to hide.
      std::fprintf(stderr, "sluice-log: %s: the log did not finish\n", name_.c_str());
      return false;
    }
    return !end.failed;
  }

  stat_table stats(const log_counts& n) const override {
    using enum metric_type;
    stat_table t = {
        {"lines", "# lines", "sluice_log_lines_written_total", "Lines written to FILE.", counter, n.written},
        {"bytes", ", # bytes", "sluice_log_written_bytes_total", "Bytes written to FILE.", counter,
         worker_->bytes_written()},
        {"rotations", ", # rotations", "sluice_log_rotations_total", "Rotations of FILE (--max-size).", counter,
         worker_->rotations()},
        {"reopens", ", # reopens", "sluice_log_reopens_total", "Reopens of FILE (SIGHUP).", counter,
         worker_->reopens()},
    };
    // With --compress: the rotated files compressed, and the tries that
    // failed (final: the worker's close waited for the compressor).
    if (log_.compress != sluice::log_options::compression::none) {
      t.push_back({"compressed", ", # compressed", "sluice_log_compressed_files_total",
                   "Rotated files compressed (--compress).", counter, worker_->compressed()});
      t.push_back({"compress_failures", ", # failed compressions", "sluice_log_compress_failures_total",
                   "Tries to compress a rotated file that failed.", counter, worker_->compress_failures()});
    }
    t.push_back({nullptr, nullptr, "sluice_log_lines_read_total",
                 "Lines read (from standard input, or the --follow files).", counter, n.lines});
    return t;
  }

 private:
  // The library rotates a regular file only (log_rotation.h); say so when
  // --max-size will not apply, once.
  void note_if_not_rotated() const {
    struct stat st {};
    if (::lstat(file_.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
    const char* kind = S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "not a regular file";
    std::fprintf(stderr, "sluice-log: %s: %s: written without rotation\n", file_.c_str(), kind);
  }

  const std::string& file_;
  const std::string& name_;
  const sluice::log_options& log_;
  std::unique_ptr<sluice::log_worker> worker_;
};

}  // namespace sluice_tools
