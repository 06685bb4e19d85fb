// log_options: how log_file_sink and log_worker write a log file
// (rotation, permissions, fsync policy).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <system_error>

namespace sluice {

struct log_options {
  /// Rotate before a chunk that would take the file past this many bytes
  /// (unless the file is empty). 0: never rotate.
  std::uint64_t max_size = 0;
  /// Rotated files to keep: app.log.1 (the newest) to app.log.<keep>. With 0,
  /// rotation starts the file afresh and keeps nothing.
  unsigned keep = 5;
  /// For a file that is created.
  mode_t permissions = 0644;

  /// How rotated files are kept: as they are (app.log.1), or compressed
  /// (app.log.1.gz, app.log.1.zst) by a background thread, so that a
  /// rotation does not stall the writes; the live file stays plain. A
  /// compressed file replaces the plain one only once whole and synced; at
  /// the next start, what a crash left half done is finished or removed.
  /// gzip and zstd need sluice built with zlib and libzstd
  /// (log_compression_available()); keep counts the compressed files.
  /// Several processes may compress one log: the renames of the chain are
  /// excluded across them (an OFD lock on the log), and so are their
  /// temporaries (app.log.gz.tmp, under flock while written). Compression
  /// applies only with max_size and keep above 0 (nothing is rotated and
  /// kept otherwise).
  ///
  /// A rotated file that cannot be compressed (ENOSPC while writing the
  /// temporary, a temporary that cannot be created, ...) stays plain,
  /// on_compress_problem hears of it, and it is tried again: 1 s later, then
  /// after twice the last wait, up to 64 s (a success starts again at 1 s);
  /// what is still plain when the log is closed is queued at its next open.
  /// At the next open, a plain app.log.N is removed only when app.log.N.gz
  /// (a regular file, not a link) decompresses whole into exactly its
  /// bytes: the crash came between the compressed file's rename and the
  /// plain one's removal (the compressor writes app.log.N.gz only by a
  /// rename of a synced temporary). Beside a twin that is not such a copy
  /// (an older compressed file left by a run with compression, then one
  /// without; a file cut short; an empty one; a directory; a link, not
  /// followed) both stay as they are, the plain file plain, and
  /// on_compress_problem hears of it; a rotation moves the two together, and
  /// past keep removes both.
  enum class compression { none, gzip, zstd };
  compression compress = compression::none;
  /// The codec's level: 0 means its default (gzip 6, zstd 3); otherwise
  /// within log_compression_levels(compress), or opening the log throws.
  /// Lower is faster: gzip 1 compresses about three times as fast as gzip 6
  /// (perf/compress-rotation.sh).
  int compress_level = 0;
  /// What on_compress_problem hears: `file` (app.log.3) stays plain for now
  /// because of `error`; or, with `bad_twin` (error: errc::file_exists), its
  /// compressed twin `file` + suffix found at open is not a whole copy of it.
  struct compress_problem {
    std::string file{};
    std::error_code error{};
    bool bad_twin = false;
  };
  /// Called on the compressor's thread (so it must be safe to call from
  /// any thread), never twice at once; null: not told.
  std::function<void(const compress_problem&)> on_compress_problem{};

  enum class fsync_policy {
    never,        // leave it to the kernel
    at_end,       // each file, once, before it is closed (end, rotation, reopen)
    every_bytes,  // after the write that brings the unsynced bytes to fsync_bytes
    every_ms,     // at most fsync_interval after a write, even when idle
  };
  fsync_policy fsync = fsync_policy::never;
  std::uint64_t fsync_bytes = 1 << 20;                 // every_bytes; 0: after every write
  std::chrono::milliseconds fsync_interval{1000};      // every_ms
  /// A log_worker only, with every_bytes and fsync_bytes 0 ("ack"): the
  /// write callbacks come once the bytes are written, not synced, and
  /// sync threads fsync behind the writes, each as soon as new bytes are
  /// there, overlapping one another and the next writes (a group commit
  /// whose next sync never waits for the last). What is on disk is
  /// log_worker::synced(); log_worker::watch_syncs() says when it moves.
  bool sync_behind = false;

  /// A log_worker only (log_file_sink ignores it): when the disk is
  /// full (ENOSPC, EDQUOT), the batch is not failed but kept, and written
  /// again (from its first chunk that did not land) every space_retry and at
  /// request_reopen(), until it lands, or until close(), which fails it with
  /// that error as without the option. Meanwhile its producer's stream waits,
  /// so backpressure holds the producers back; log_worker::waiting_for_space()
  /// tells. Off: the first ENOSPC fails the batch.
  bool wait_for_space = false;
  std::chrono::milliseconds space_retry{1000};
};

/// Whether this build of sluice can compress rotated files with `c` (none:
/// always): it was built with zlib for gzip, with libzstd for zstd.
bool log_compression_available(log_options::compression c) noexcept;

/// The levels log_options::compress_level may name for `c`: gzip 1 to 9,
/// zstd 1 to 22 (none: {0, 0}). 0 is always accepted, as the codec's default.
struct compression_levels {
  int min, max;
};
compression_levels log_compression_levels(log_options::compression c) noexcept;

}  // namespace sluice
