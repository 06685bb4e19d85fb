// transform: Node v20's Transform and PassThrough
// (lib/internal/streams/transform.js, passthrough.js): a duplex whose
// written chunks are turned into readable data by a transformer.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "sluice/stream/duplex.h"

namespace sluice {

class transform;

/// Completes a transformer's transform() or flush(): Node's callback(err,
/// data). Call it exactly once: with an error, with nothing, or with data,
/// which is pushed first (as push(data) then callback()).
class transform_done {
 public:
  void operator()(std::error_code ec = {}) const;
  void operator()(std::string_view data) const;
  void operator()(const char* data) const { (*this)(std::string_view(data)); }
  void operator()(std::string&& data) const;

 private:
  friend class transform;
  transform_done(transform* t, bool flush) noexcept : t_(t), flush_(flush) {}
  void complete(std::error_code ec, const std::string_view* data, std::string* owned) const;
  transform* t_;
  bool flush_;
};

/// What a transform does with its chunks: Node's _transform and _flush.
/// transform() may push() any number of chunks onto stream() before calling
/// `done`, now or later; the next chunk comes only after `done`, and only
/// when the readable side has room (the transform's backpressure).
///
///     struct upper : sluice::transformer {
///       void transform(std::string_view chunk, sluice::transform_done done) override {
///         std::string s(chunk);
///         for (char& c : s) c = std::toupper(static_cast<unsigned char>(c));
///         done(std::move(s));
///       }
///     };
class transformer {
 public:
  virtual ~transformer() = default;
  /// Node: _transform(chunk, encoding, callback). `chunk` stays valid until
  /// `done` is called.
  virtual void transform(std::string_view chunk, transform_done done) = 0;
  /// Node: _flush(callback): after the last chunk, before the readable side
  /// ends. Only called when has_flush() is true.
  virtual void flush(transform_done done) { done(); }
  virtual bool has_flush() const noexcept { return false; }
  /// Node: _destroy, synchronous; returns the error the stream should report.
  virtual std::error_code destroy(std::error_code err) noexcept { return err; }

 protected:
  /// The transform this transformer serves; valid from construction on.
  sluice::transform& stream() const noexcept { return *stream_; }

 private:
  friend class transform;
  sluice::transform* stream_ = nullptr;
};

/// A Transform. Writes go to the transformer; what it pushes is read from
/// the readable side. end() flushes the transformer and then ends the
/// readable side, so 'finish' comes before 'end'.
///
///     sluice::transform up(std::make_unique<upper>());
///     src.pipe(up);
///     up.pipe(dest);
class transform : public duplex {
 public:
  explicit transform(std::unique_ptr<transformer> t, const duplex_options& options = {});
  ~transform();

  transform& destroy(std::error_code err = {}) {
    duplex::destroy(err);
    return *this;
  }
  transformer& get_transformer() const noexcept { return *transformer_; }

 private:
  friend class transform_done;
  class write_side;
  class read_side;

  void transform_write(std::string_view chunk, write_done done);
  void transform_read();
  void transform_final(final_done done);
  // `data` is null when the callback came without data.
  void after_transform(std::error_code ec, const std::string_view* data, std::string* owned);
  void after_flush(std::error_code ec, const std::string_view* data, std::string* owned);
  void push_data(const std::string_view* data, std::string* owned);

  std::unique_ptr<transformer> transformer_;
  std::optional<write_done> callback_;   // Node: this[kCallback]
  std::optional<write_done> writing_cb_;  // the write whose transform() runs
  std::optional<final_done> final_cb_;    // the flush that runs
  std::size_t length_at_write_ = 0;       // readable length when the chunk came
};

/// Node's PassThrough: a transform that passes every chunk on unchanged.
class pass_through : public transform {
 public:
  explicit pass_through(const duplex_options& options = {});
};

}  // namespace sluice
