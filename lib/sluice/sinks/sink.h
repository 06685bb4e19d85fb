// sink: where a Writable's bytes go. Node's _write, _writev, _final and
// _destroy, as an interface a Writable is constructed with, and sink_host,
// the interface the sink reports to: the seam between a stream and its I/O.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <string_view>
#include <system_error>

#include "sluice/queue/write_queue.h"

namespace sluice {

class loop;
class sink;
struct sink_caps;

/// Completes a sink's destroy(): call it once, with the error the stream
/// should report.
using destroy_done = inline_function<void(std::error_code), 16>;

/// What a sink reports to: the stream that owns it (a writable implements
/// it), seen from the sink's side. A sink reaches it only through the
/// completions it is handed (write_done, final_done) and sink::report_error(),
/// so that this layer names nothing above it, as Seastar's data_sink_impl
/// never names output_stream. Anything can host a sink: a test may drive a
/// sink with a host of its own.
class sink_host {
 public:
  /// Node: onwrite(er). The write or writev in flight completed; `landed`
  /// is 0 on success, else the chunks written whole (see write_done).
  virtual void on_write(std::error_code ec, std::size_t landed) noexcept = 0;
  /// Node: the callback of _final (callFinal's onFinish).
  virtual void on_finish(std::error_code ec) noexcept = 0;
  /// The callback of the one write in flight, taken out of the host (see
  /// write_done::take_callback()).
  virtual write_cb take_write_cb() noexcept = 0;
  /// An error met outside any sink call (see sink::report_error()).
  virtual void on_sink_error(std::error_code ec) noexcept = 0;
  /// The sink's capabilities changed (see sink::set_caps()). A host that
  /// read them when it was built reads them again; the default ignores it.
  virtual void on_sink_caps(const sink_caps& /*caps*/) noexcept {}

 protected:
  ~sink_host() = default;
  /// Makes this the host `s` reports to; called before s.attach().
  void host(sink& s) noexcept;
};

/// Completes a sink's write or writev: call it exactly once, with no error
/// or with the reason the bytes did not land. It may be called from inside
/// the sink call (a synchronous sink) or later from the loop.
///
/// A writev that failed after some of its chunks were written whole says
/// how many with `landed` (counted from the first): their callbacks hear
/// success, the others the error, so that a caller who retries what failed
/// duplicates nothing. (Differs from Node, whose _writev callback takes one
/// error for every chunk.)
class write_done {
 public:
  /// Made by the host for each sink call.
  explicit write_done(sink_host& h) noexcept : h_(&h) {}

  // Inline: a completion costs the sink one indirect call into its host.
  void operator()(std::error_code ec = {}) const noexcept { h_->on_write(ec, 0); }
  void operator()(std::error_code ec, std::size_t landed) const noexcept { h_->on_write(ec, ec ? landed : 0); }

  /// sluice's own: takes the callback of this call's chunk out of the
  /// stream, which then calls nothing when the call completes; the sink owns
  /// it from then on and calls it exactly once, also when it is destroyed
  /// first. It exists because some sinks complete a write (so that the
  /// stream moves on and the next write comes) long before its bytes are
  /// safe, and the writer's callback must wait for that second moment
  /// instead: kafka_sink calls it on the broker's delivery report, relp_sink
  /// (syslog/relp_writable.cc) on the server's `rsp` for that message, and
  /// spool_sink (spool/spool_writable.cc) once the record is on disk or
  /// acknowledged downstream. Three sinks of different layers share the need, so
  /// it belongs to the seam rather than to one of them. Only for write(),
  /// not writev(), and before completing the call. Empty when the write has
  /// no callback.
  write_cb take_callback() const noexcept { return h_->take_write_cb(); }

 private:
  sink_host* h_;
};

/// Completes a sink's final, like write_done.
class final_done {
 public:
  explicit final_done(sink_host& h) noexcept : h_(&h) {}
  void operator()(std::error_code ec = {}) const noexcept { h_->on_finish(ec); }

 private:
  sink_host* h_;
};

/// The chunks of one writev, oldest first. A view over the stream's queue:
/// valid until the write_done of that call is called.
///
/// The iterator gives each chunk as it was written. Chunks that lie side by
/// side in memory (the stream's runs of same-size writes, see write_req)
/// can also be taken a run at a time: run() and next_run(), for a sink
/// that hands the bytes on without looking at their bounds (fd_writer).
class write_batch {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = std::string_view;

    iterator() = default;
    std::string_view operator*() const noexcept { return req_->chunk(index_); }
    iterator& operator++() noexcept {
      if (--left_ != 0 && ++index_ == req_->count()) {
        req_ = detail::write_queue::next(*req_);
        index_ = 0;
      }
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator t = *this;
      ++*this;
      return t;
    }
    bool operator==(const iterator& o) const noexcept { return left_ == o.left_; }

    /// The chunks from this one to the end of its run (within the batch),
    /// as one view, and how many they are; run(n): the first n of them.
    std::string_view run() const noexcept { return run(run_chunks()); }
    std::string_view run(std::size_t n) const noexcept { return {req_->first + index_ * req_->size(), n * req_->size()}; }
    std::size_t run_chunks() const noexcept { return std::min(req_->count() - index_, left_); }
    /// Moves past the chunks of run().
    iterator& next_run() noexcept {
      const std::size_t n = run_chunks();
      left_ -= n;
      if (left_ != 0) {
        req_ = detail::write_queue::next(*req_);
        index_ = 0;
      } else {
        index_ += n;
      }
      return *this;
    }

   private:
    friend class write_batch;
    iterator(const detail::write_req* r, std::size_t left) noexcept : req_(r), left_(left) {}
    const detail::write_req* req_ = nullptr;
    std::size_t index_ = 0;  // the chunk within *req_
    std::size_t left_ = 0;   // chunks from this one to the end of the batch
  };

  write_batch() = default;
  /// Made by the host: a view of `q`, whose requests stay put until the
  /// call completes.
  explicit write_batch(const detail::write_queue& q) noexcept
      : first_(q.first()), count_(q.size()), bytes_(q.bytes()) {}
  iterator begin() const noexcept { return {first_, count_}; }
  iterator end() const noexcept { return {nullptr, 0}; }
  /// The chunks: one per write.
  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  /// Total bytes of the chunks.
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  const detail::write_req* first_ = nullptr;
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

/// What a sink implements beyond write(), given once to its constructor and
/// read by its host when it is built (a writable keeps its own copy), so that
/// the write path asks no virtual question per call.
///
/// A struct of bools rather than a flag enum: a sink states them by name
/// with designated initializers (`sink({.writev = true, .final = true})`),
/// an omitted one is false, and no bit operators need defining for them.
///
/// Each flag corresponds to an override, and the host relies on the flag
/// alone: a flag set without its override asserts in a debug build (the
/// default writev() and final() check), but an override without its flag is
/// never called, which nothing can detect. Set the flag where you override.
struct sink_caps {
  /// Overrides writev(): the host hands it two chunks or more at once.
  bool writev = false;
  /// Overrides final(): the host calls it once after end().
  bool final = false;
  /// sluice's own: the writable holds writes until the end of the current
  /// turn of the loop (as if corked), so that everything written in one turn
  /// reaches writev() together. fd sinks ask for it. Implies nothing without
  /// writev.
  bool coalesce = false;
};

/// sluice's own exit path, for shutdown (see stream/detail/shutdown.h): a
/// sink that can write synchronously lets a writable that is destroyed
/// without end(), or still alive at exit(), write what it holds before it
/// goes. A sink offers it by deriving from this too and handing itself to
/// sink's constructor (`sink(caps, this)`): the writable finds it through
/// that pointer, without a cast. fd sinks do; an ordinary sink does not.
class sync_sink {
 public:
  /// Blocks until the write or writev in flight, if any, has written all its
  /// bytes or failed, and returns its error. Its write_done is then never
  /// called: the stream settles that call itself. Never called after destroy.
  virtual std::error_code drain_sync() noexcept = 0;
  /// Writes `batch` (one chunk or more), blocking until every byte is written
  /// or the write fails. Called only after drain_sync(), with nothing in flight.
  virtual std::error_code write_sync(const write_batch& batch) noexcept = 0;
  /// After drain_sync() or write_sync() returned an error: the chunks of
  /// that call, from its first, that were written whole (see write_done).
  virtual std::size_t landed_sync() const noexcept = 0;

 protected:
  ~sync_sink() = default;
};

/// The destination of a writable. A sink serves one stream (its host), which
/// calls it in Node's order: write or writev one at a time (never a second before the
/// first is done), then final once, then destroy once.
///
///     class stdout_sink final : public sluice::sink {
///      public:
///       stdout_sink() : sink({}) {}  // write() only: no writev, no final
///       void write(std::string_view chunk, sluice::write_done done) override {
///         std::fwrite(chunk.data(), 1, chunk.size(), stdout);
///         done();
///       }
///     };
class sink {
 public:
  virtual ~sink() = default;

  /// What this sink implements (see sink_caps).
  const sink_caps& caps() const noexcept { return caps_; }
  /// The exit path, when this sink offers one (see sync_sink), else null.
  sync_sink* sync() const noexcept { return sync_; }

  /// Called when the writable that owns this sink is built, and again if
  /// its loop is destroyed before it (the stream then moves to a loop of its
  /// own: see stream/detail/shutdown.h).
  virtual void attach(loop& /*l*/) {}

  /// Node: _write(chunk, encoding, cb). `chunk` stays valid until `done`.
  virtual void write(std::string_view chunk, write_done done) = 0;

  /// Node: _writev(chunks, cb). Called with two chunks or more, and only
  /// when caps().writev is set.
  virtual void writev(const write_batch& batch, write_done done);

  /// Node: _final(cb). Called once after end(), when every write is done,
  /// and only when caps().final is set.
  virtual void final(final_done done);

  /// Node: _destroy(err, cb): release what the sink holds (close an fd) and
  /// call `done` exactly once with the error the stream should report,
  /// normally `err`. A sink whose destroy is synchronous calls it before
  /// returning; one whose destroy completes later (compose()'s, which waits
  /// for its chain) calls it then. Until then the stream is destroyed but
  /// not closed: 'error' and 'close' come after `done`. A sink destroyed
  /// first (its stream deleted) drops `done` without calling it.
  virtual void destroy(std::error_code err, destroy_done done) noexcept { done(err); }

 protected:
  explicit sink(sink_caps caps) noexcept : caps_(caps) {}
  /// For a sink that offers the exit path: `sink(caps, this)`.
  sink(sink_caps caps, sync_sink* sync) noexcept : caps_(caps), sync_(sync) {}

  /// For a sink whose capabilities change once (a socket's writev, which
  /// waits for the connection): the host reads them again.
  void set_caps(sink_caps caps) noexcept;

  /// For an error met outside any call (a timer, a request from elsewhere):
  /// destroys the stream this sink serves with `ec`, as destroy(ec) on it
  /// would. Does nothing for a sink that serves no stream.
  void report_error(std::error_code ec) noexcept;

 private:
  friend class sink_host;
  sink_caps caps_;
  sync_sink* sync_ = nullptr;
  sink_host* host_ = nullptr;  // set by the host before attach()
};

inline void sink_host::host(sink& s) noexcept { s.host_ = this; }

}  // namespace sluice
