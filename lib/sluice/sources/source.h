// source: where a Readable's bytes come from. Node's _read and _destroy, as
// an interface a readable is constructed with, and source_host, the
// interface the source pushes to: the seam between a stream and its I/O.
#pragma once

#include <cstddef>
#include <string_view>
#include <system_error>

namespace sluice {

class loop;
class source;

/// What a source pushes to: the stream that owns it (a readable implements
/// it), seen from the source's side, so that this layer names nothing above
/// it (see sink_host). A source reaches it through source::push(),
/// push_eof() and report_error().
class source_host {
 public:
  /// Node: readable.push(chunk), push(null) and destroy(err).
  virtual bool source_push(std::string_view chunk) = 0;
  virtual bool source_push_eof() = 0;
  virtual void on_source_error(std::error_code ec) noexcept = 0;

 protected:
  ~source_host() = default;
  /// Makes this the host `s` pushes to; called before s.attach().
  void host(source& s) noexcept;
};

/// The origin of a readable's data. The readable calls read(n) when it wants
/// more (Node's _read(size)); the source answers, then or later, by calling
/// push() once or more, push_eof() at the end, or report_error(err) on
/// failure. read() is not called again until something has been pushed.
///
///     class counter_source : public sluice::source {
///       int next_ = 0;
///       void read(std::size_t) override {
///         if (next_ == 3) push_eof();
///         else push(std::to_string(next_++));
///       }
///     };
class source {
 public:
  virtual ~source() = default;

  /// Called once, when the readable that owns this source is built.
  virtual void attach(loop& /*l*/) {}

  /// Node: _read(size). `n` is the stream's high-water mark: a hint of how
  /// much to push. Must not throw; report failures with report_error(err).
  virtual void read(std::size_t n) = 0;

  /// Node: _destroy(err, cb), synchronous: release what the source holds.
  /// Returns the error the stream should report, normally `err`.
  virtual std::error_code destroy(std::error_code err) noexcept { return err; }

 protected:
  /// The readable's push(chunk), push_eof() and destroy(ec), through its
  /// host interface: valid from attach() on.
  bool push(std::string_view chunk) { return host_->source_push(chunk); }
  bool push_eof() { return host_->source_push_eof(); }
  void report_error(std::error_code ec) noexcept;

  /// The readable this source feeds, valid from attach() on, for a source
  /// that sits above the streams (a test's, a socket's) and includes
  /// stream/readable.h, which defines readable_of(): this layer does not
  /// name the readable, the lookup happens where stream() is used.
  template <class Host = source_host>
  auto& stream() const noexcept {
    return readable_of(static_cast<Host&>(*host_));
  }

 private:
  friend class source_host;
  source_host* host_ = nullptr;  // set by the host before attach()
};

inline void source_host::host(source& s) noexcept { s.host_ = this; }

}  // namespace sluice
