// null_sink: discards everything at once; what remains is the stream's own cost.
#pragma once

#include <cstddef>
#include <string_view>

#include "sluice/sinks/sink.h"

namespace sluice {

/// Discards everything and completes at once: the cost of the stream alone.
class null_sink : public sink {
 public:
  null_sink() noexcept : sink({.writev = true}) {}
  void write(std::string_view chunk, write_done done) override {
    bytes_ += chunk.size();
    done();
  }
  void writev(const write_batch& batch, write_done done) override {
    bytes_ += batch.bytes();
    done();
  }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  std::size_t bytes_ = 0;
};

}  // namespace sluice
