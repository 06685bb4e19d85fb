// Node's lib/internal/streams/transform.js and passthrough.js. A transform's
// sink hands each written chunk to the transformer (Node: _write calling
// _transform), its final flushes and ends the readable side (Node: final),
// and its source releases a held write callback when data is wanted (Node:
// _read). The chunk's write callback is held while the readable side is full:
// that is the transform's backpressure.
#include "sluice/stream/transform.h"

#include "sluice/base/errors.h"

namespace sluice {

class transform::write_side final : public sink {
 public:
  explicit write_side(transform* t) noexcept : sink({.final = true}), t_(t) {}
  void write(std::string_view chunk, write_done done) override { t_->transform_write(chunk, done); }
  void final(final_done done) override { t_->transform_final(done); }
  void destroy(std::error_code err, destroy_done done) noexcept override {
    done(t_->transformer_ ? t_->transformer_->destroy(err) : err);
  }

 private:
  transform* t_;
};

class transform::read_side final : public source {
 public:
  explicit read_side(transform* t) noexcept : t_(t) {}
  void read(std::size_t) override { t_->transform_read(); }

 private:
  transform* t_;
};

namespace {
// Node's Transform constructor: a readable high-water mark of 0 makes the
// writable side's 0 too, unless it was given.
duplex_options transform_options(duplex_options o) {
  const auto readable_hwm = o.high_water_mark ? o.high_water_mark : o.readable_high_water_mark;
  if (readable_hwm && *readable_hwm == 0) {
    o.high_water_mark.reset();
    o.readable_high_water_mark = 0;
    if (!o.writable_high_water_mark) o.writable_high_water_mark = 0;
  }
  return o;
}
}  // namespace

transform::transform(std::unique_ptr<transformer> t, const duplex_options& options)
    : duplex(std::make_unique<read_side>(this), std::make_unique<write_side>(this), transform_options(options)),
      transformer_(std::move(t)) {
  if (!transformer_) throw stream_error(make_error_code(errc::method_not_implemented), "transform needs a transformer");
  transformer_->stream_ = this;
  readable::state_.clear(detail::rflag::sync);
}

// The transformer goes before the duplex's sides, which would otherwise
// reach it through the sink's destroy after it is gone.
transform::~transform() {
  if (!writable::destroyed()) transformer_->destroy({});
  transformer_.reset();
}

void transform_done::operator()(std::error_code ec) const { complete(ec, nullptr, nullptr); }
void transform_done::operator()(std::string_view data) const { complete({}, &data, nullptr); }
void transform_done::operator()(std::string&& data) const {
  const std::string_view view(data);
  complete({}, &view, &data);
}
void transform_done::complete(std::error_code ec, const std::string_view* data, std::string* owned) const {
  if (flush_)
    t_->after_flush(ec, data, owned);
  else
    t_->after_transform(ec, data, owned);
}

// Node: `if (val != null) this.push(val)`.
void transform::push_data(const std::string_view* data, std::string* owned) {
  if (!data) return;
  if (owned)
    push(std::move(*owned));
  else
    push(*data);
}

// Node: Transform.prototype._write.
void transform::transform_write(std::string_view chunk, write_done done) {
  length_at_write_ = readable_length();
  writing_cb_ = done;
  transformer_->transform(chunk, transform_done(this, false));
}

// Node: the callback Transform.prototype._write gives _transform.
void transform::after_transform(std::error_code ec, const std::string_view* data, std::string* owned) {
  if (!writing_cb_) {
    // Node: the callback called twice pushes its data again, and then the
    // write callback's second call is ERR_MULTIPLE_CALLBACK (onwrite()).
    if (!ec) push_data(data, owned);
    writable::error_or_destroy(make_error_code(errc::multiple_callback), false);
    return;
  }
  const write_done callback = *writing_cb_;
  writing_cb_.reset();
  if (ec) {
    callback(ec);
    return;
  }
  push_data(data, owned);
  if (readable::eof_pushed()) {
    readable::call_soon([callback] { callback(); });
  } else if (writable::state_.has(detail::wflag::ended) || length_at_write_ == readable_length() ||
             readable_length() < readable_high_water_mark()) {
    callback();
  } else {
    callback_ = callback;
  }
}

// Node: Transform.prototype._read.
void transform::transform_read() {
  if (callback_) {
    const write_done callback = *callback_;
    callback_.reset();
    callback();
  }
}

// Node: final(cb), Transform.prototype._final.
void transform::transform_final(final_done done) {
  if (transformer_->has_flush() && !destroyed()) {
    final_cb_ = done;
    transformer_->flush(transform_done(this, true));
  } else {
    push_eof();
    done();
  }
}

// Node: the callback final() gives _flush.
void transform::after_flush(std::error_code ec, const std::string_view* data, std::string* owned) {
  if (!final_cb_) {
    writable::error_or_destroy(make_error_code(errc::multiple_callback), false);
    return;
  }
  const final_done cb = *final_cb_;
  final_cb_.reset();
  if (ec) {
    cb(ec);
    return;
  }
  push_data(data, owned);
  push_eof();
  cb();
}

namespace {
struct pass_chunks final : transformer {
  void transform(std::string_view chunk, transform_done done) override { done(chunk); }
};
}  // namespace

pass_through::pass_through(const duplex_options& options) : transform(std::make_unique<pass_chunks>(), options) {}

}  // namespace sluice
