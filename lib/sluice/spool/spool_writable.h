// spool_writable: a writable that keeps what it is given in append-only
// segment files on disk and sends it from there, in order, to another
// writable (syslog_writable, relp_writable, a Kafka writable), so that a
// receiver that is away, or slower than the producer, or a crash of the
// process, loses nothing that the spool had taken.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "sluice/stream/typed_stream.h"

namespace sluice {

namespace detail {
class spool_sink;
}
class spool_writable;

/// When the spool fsyncs its segments.
enum class spool_sync {
  /// Never: a record is in the kernel's page cache when its callback comes.
  /// It survives the process (SIGKILL, a crash), not the machine (a power
  /// loss, a kernel panic).
  none,
  /// Each batch written (what one turn of the loop wrote, at most
  /// flush_bytes) is fsynced before its callbacks: a record survives the
  /// machine too. One fsync a batch, not a record.
  batch,
};

struct spool_options {
  /// The directory of the segments: made 0700 if it does not exist, refused
  /// if it is a symbolic link, owned by another user, writable by group or
  /// others, or in use by another spool.
  std::string dir;
  /// The most bytes on disk (segment files, headers included). Past it the
  /// producer is held back as by any writable: write() returns false and
  /// 'drain' comes as acknowledged segments are deleted.
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
  /// A segment is closed, and a new one begun, once it holds this much; a
  /// segment is deleted once every record of it is acknowledged. Capped at
  /// max_bytes / 4, so that deleting a segment makes room.
  std::uint64_t segment_bytes = std::uint64_t{8} << 20;
  spool_sync sync = spool_sync::none;
  /// Records wait in memory at most this many bytes (or to the end of the
  /// loop's turn) before one write() to the segment.
  std::size_t flush_bytes = 256 * 1024;
  /// Called once, the first time the spool cannot write its segment (ENOSPC,
  /// EIO, ...): the spool then works as the writable behind it would alone,
  /// with backpressure and in memory, and tries the disk again a second
  /// later. Later failures are only counted (spool_failures()).
  std::function<void(std::error_code ec)> on_spool_error{};
  /// Called for each record the downstream failed without failing itself
  /// (relp_writable's refusal: the receiver answered other than 200): the
  /// record is dropped from the spool (refused()), never sent again, and
  /// the spool goes on with the next.
  std::function<void(std::error_code ec)> on_refused{};
  /// Which of those failures are refusals. A failure this says is not one
  /// (a Kafka delivery report that timed out while the brokers were away: sent
  /// again later it would land) fails the spool as the downstream's own
  /// failure does: the record and those after it stay in the spool for the
  /// next run. Empty: every failure that leaves the downstream up is a refusal.
  std::function<bool(std::error_code ec)> is_refusal{};
  /// The stream's options. Chunks are messages: object mode, and the
  /// high-water mark counts messages (1024 unless set).
  writable_options stream{};
};

/// A new spool_writable (see below) in front of `downstream`, which it owns.
/// Throws stream_error when `options.dir` is refused (see spool_options);
/// `downstream` is then destroyed.
std::unique_ptr<spool_writable> make_spool_writable(std::unique_ptr<writable> downstream, const spool_options& options);
/// The non-throwing twin: null, and `ec` says why.
std::unique_ptr<spool_writable> make_spool_writable(std::unique_ptr<writable> downstream, const spool_options& options,
                                                    std::error_code& ec) noexcept;

/// A writable in front of another (`downstream`, which it owns): each chunk
/// is appended to a segment file in `dir` and sent from there, in order.
///
///     auto log = sluice::make_spool_writable(sluice::make_relp_writable({.port = 2514}),
///                                            {.dir = "/var/spool/api", .max_bytes = 256 << 20});
///     log->write("user 42 logged in", [](std::error_code ec) { /* !ec: on disk in the spool */ });
///     log->end([](std::error_code ec) { /* !ec: all sent and acknowledged, the spool empty */ });
///
/// A write's callback comes when its record is in the spool (written to the
/// segment, and fsynced with spool_sync::batch), not when the receiver has
/// it: every chunk goes through the spool, none past it, so that what a
/// callback called durable is on disk whatever happens next. (While the
/// spool cannot be written, see on_spool_error, chunks go straight to
/// `downstream` and their callbacks are the downstream's.)
///
/// A segment is deleted once the downstream's callback of each of its
/// records said success (acknowledged for RELP and Kafka, in the kernel's
/// socket buffer for plain syslog) or refused the record without failing
/// the downstream (a RELP rsp 500: dropped, counted in refused()). A
/// downstream that fails (its 'error') fails the spool: what it did not
/// acknowledge stays in `dir`. A new spool_writable on the same `dir`
/// (after a crash, a SIGKILL, or an end() that could not finish) sends what
/// was left first, from the saved position of the acknowledgements on,
/// then what it is given: at least once, in order. What was sent and not
/// known to be acknowledged when the process died is sent again.
///
/// The producer is held back only when the spool holds max_bytes: until
/// then write() returns true whatever the receiver does.
///
/// end(): once every record is acknowledged, the segments are deleted and
/// `downstream` is ended; the callback is its end's.
///
/// A typed handle (stream/typed_stream.h): the counters below are its
/// sink's, reached without a cast.
class spool_writable : public typed_writable<detail::spool_sink> {
 public:
  ~spool_writable();

  /// The writable the records are sent to.
  writable& downstream() noexcept;

  /// Records, and their payload bytes, written to segments by this spool.
  std::uint64_t spooled_records() const noexcept;
  std::uint64_t spooled_bytes() const noexcept;
  /// Records read back from the spool and handed to the downstream, and of
  /// those, the ones whose downstream callback said success, and the ones
  /// it refused (see on_refused), dropped. The rest of sent_from_spool()
  /// is in flight, and stays in the spool until it is one or the other.
  std::uint64_t sent_from_spool() const noexcept;
  std::uint64_t acked() const noexcept;
  std::uint64_t refused() const noexcept;
  /// Of acked() and refused(), the records an earlier run had spooled
  /// (from the segments it left): acked() - acked_earlier() are this
  /// spool's own.
  std::uint64_t acked_earlier() const noexcept;
  std::uint64_t refused_earlier() const noexcept;
  /// Segment files in the spool now, and their bytes.
  std::size_t segments() const noexcept;
  std::uint64_t disk_bytes() const noexcept;
  /// Segments found in `dir` when the spool opened (left by an earlier run).
  std::size_t recovered_segments() const noexcept;
  /// Bytes dropped at the end of a segment because they were not a whole,
  /// intact record (a tail torn by a crash).
  std::uint64_t torn_bytes() const noexcept;
  /// Writes to the spool that failed (see on_spool_error), and chunks that
  /// went straight to the downstream meanwhile.
  std::size_t spool_failures() const noexcept;
  std::uint64_t bypassed() const noexcept;

 private:
  friend std::unique_ptr<spool_writable> make_spool_writable(std::unique_ptr<writable> downstream,
                                                             const spool_options& options, std::error_code& ec) noexcept;
  spool_writable(std::unique_ptr<detail::spool_sink> s, const spool_options& options);
};

}  // namespace sluice
