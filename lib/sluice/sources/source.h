// source: where a Readable's bytes come from. Node's _read and _destroy, as
// an interface a readable is constructed with.
#pragma once

#include <cstddef>
#include <string_view>
#include <system_error>

namespace sluice {

class readable;
class loop;

/// The origin of a readable's data. The readable calls read(n) when it wants
/// more (Node's _read(size)); the source answers, then or later, by calling
/// push() on its stream (stream()) once or more, push_eof() at the end, or
/// destroy(err) on failure. read() is not called again until something has
/// been pushed.
///
///     class counter_source : public sluice::source {
///       int next_ = 0;
///       void read(std::size_t) override {
///         if (next_ == 3) stream().push_eof();
///         else stream().push(std::to_string(next_++));
///       }
///     };
class source {
 public:
  virtual ~source() = default;

  /// Called once, when the readable that owns this source is built.
  virtual void attach(loop& /*l*/) {}

  /// Node: _read(size). `n` is the stream's high-water mark: a hint of how
  /// much to push. Must not throw; report failures with stream().destroy(err).
  virtual void read(std::size_t n) = 0;

  /// Node: _destroy(err, cb), synchronous: release what the source holds.
  /// Returns the error the stream should report, normally `err`.
  virtual std::error_code destroy(std::error_code err) noexcept { return err; }

 protected:
  /// The readable this source feeds; valid from attach() on.
  readable& stream() const noexcept { return *stream_; }
  /// stream().push(chunk), push_eof() and destroy(ec), for a source that
  /// knows nothing of the readable (the library's own sources sit below
  /// the streams: see sluice/factories.h).
  bool push(std::string_view chunk);
  bool push_eof();
  void report_error(std::error_code ec) noexcept;

 private:
  friend class readable;
  readable* stream_ = nullptr;
};

}  // namespace sluice
