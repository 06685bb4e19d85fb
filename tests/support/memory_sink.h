// memory_sink: a synchronous sink that keeps what it is given, for tests.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sluice/sinks/sink.h"

namespace sluice {

/// Appends everything to a string and completes at once. Counts its calls.
class memory_sink : public sink {
 public:
  memory_sink() noexcept : sink({.writev = true}) {}
  void write(std::string_view chunk, write_done done) override {
    data_.append(chunk);
    ++writes_;
    done();
  }
  void writev(const write_batch& batch, write_done done) override {
    data_.reserve(data_.size() + batch.bytes());
    for (std::string_view c : batch) data_.append(c);
    ++writevs_;
    done();
  }

  const std::string& data() const noexcept { return data_; }
  std::size_t writes() const noexcept { return writes_; }
  std::size_t writevs() const noexcept { return writevs_; }

 private:
  std::string data_;
  std::size_t writes_ = 0;
  std::size_t writevs_ = 0;
};

}  // namespace sluice
