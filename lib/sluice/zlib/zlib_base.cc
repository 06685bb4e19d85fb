// Node's lib/zlib.js: ZlibBase, processChunk() and processCallback(). Each
// written chunk runs through the codec in steps, each step's output pushed
// as it comes (at most chunk_size bytes at a time), and the write completes
// once the chunk is consumed: Transform's own backpressure then holds the
// next chunk while the readable side is full.
#include "sluice/zlib/zlib_base.h"

#include <string>


namespace sluice {
namespace {

// flush() queues an empty chunk that points into this array, one byte per
// kind, as Node queues one of its kFlushBuffers: the writable keeps an empty
// chunk's address, so the codec's transformer tells a flush from a write by
// it, and the flush keeps its place among the writes (a caller's own empty
// write points elsewhere, and does nothing, as in Node).
constexpr char flush_markers[5] = {};

bool is_flush_marker(std::string_view chunk) noexcept {
  return chunk.empty() && chunk.data() >= flush_markers && chunk.data() < flush_markers + std::size(flush_markers);
}

class codec_transformer final : public transformer {
 public:
  codec_transformer(std::unique_ptr<detail::codec> c, std::size_t chunk_size)
      : codec_(std::move(c)), chunk_size_(chunk_size) {}

  // Node: Zlib.prototype._transform.
  void transform(std::string_view chunk, transform_done done) override {
    if (is_flush_marker(chunk))
      run({}, detail::codec_op::flush, static_cast<flush_kind>(chunk.data() - flush_markers), done);
    else
      run(chunk, detail::codec_op::process, flush_kind::none, done);
  }
  // Node: Zlib.prototype._flush, processChunk with the finish flag.
  void flush(transform_done done) override { run({}, detail::codec_op::finish, flush_kind::none, done); }
  bool has_flush() const noexcept override { return true; }

  std::size_t bytes_written = 0;

 private:
  // Node: processChunk() and processCallback(): steps until the input is
  // consumed and the codec holds nothing more for the op.
  void run(std::string_view in, detail::codec_op op, flush_kind kind, transform_done done) {
    for (;;) {
      std::string out(chunk_size_, '\0');
      const detail::codec_step s = codec_->step(in, out, op, kind);
      in.remove_prefix(s.consumed);
      bytes_written += s.consumed;
      if (s.ec) {
        done(s.ec);
        return;
      }
      if (s.produced > 0) {
        out.resize(s.produced);
        stream().push(std::move(out));
      }
      if (in.empty() && !s.more) break;
      // A step that takes nothing and gives nothing has nothing more to
      // give now (zlib's Z_BUF_ERROR): input that cannot be taken is the
      // codec's error to report, so this ends only the wait for output.
      if (s.consumed == 0 && s.produced == 0) break;
    }
    done();
  }

  std::unique_ptr<detail::codec> codec_;
  std::size_t chunk_size_;
};

}  // namespace

zlib_base::zlib_base(std::unique_ptr<detail::codec> c, std::size_t chunk_size, flush_kind default_full_flush)
    : transform(std::make_unique<codec_transformer>(std::move(c), chunk_size)), default_full_flush_(default_full_flush) {}

// Node: ZlibBase.prototype.flush.
void zlib_base::flush(flush_kind kind, write_cb cb) {
  if (writable_finished()) {
    if (cb) readable::call_soon([cb = std::move(cb)]() mutable { cb({}); });
  } else if (writable_ended()) {
    if (cb) once(event::end, [cb = std::move(cb)]() mutable { cb({}); });
  } else {
    write(std::shared_ptr<const void>(), std::string_view(flush_markers + static_cast<int>(kind), 0), std::move(cb));
  }
}

std::size_t zlib_base::bytes_written() const noexcept {
  return static_cast<const codec_transformer&>(get_transformer()).bytes_written;
}

}  // namespace sluice
