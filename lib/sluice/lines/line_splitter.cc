#include "sluice/lines/line_splitter.h"

namespace sluice {

std::optional<std::string_view> line_splitter::fail(std::error_code& ec) noexcept {
  failed_ = true;
  slow_ = true;
  rest_ = {};
  // The buffer goes: a failed splitter holds no memory.
  std::string().swap(carry_);
  carry_used_ = false;
  ec = make_error_code(errc::line_too_long);
  return std::nullopt;
}

// Everything the fast path leaves: an error, a carried line to clear, a line
// that started in an earlier chunk, or a chunk with no "\n" left.
std::optional<std::string_view> line_splitter::next_slow(std::error_code& ec) {
  if (failed_) {
    ec = make_error_code(errc::line_too_long);
    return std::nullopt;
  }
  if (carry_used_) {
    carry_.clear();  // keeps its capacity for the next straddling line
    carry_used_ = false;
  }
  update_slow();
  if (rest_.empty()) return std::nullopt;

  const void* nl = std::memchr(rest_.data(), '\n', rest_.size());
  if (!nl) {
    // No end in this chunk: keep the start of the line. Past max + 1 bytes
    // (the last may be the "\r" of a "\r\n"), the line is too long already.
    if (carry_.size() + rest_.size() - 1 > max_) return fail(ec);  // rest_ is not empty
    carry_.append(rest_);
    rest_ = {};
    update_slow();
    return std::nullopt;
  }
  if (carry_.empty()) return next(ec);  // a fresh line after all: the fast path takes it

  const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - rest_.data());
  if (carry_.size() + len - 1 > max_) return fail(ec);  // carry_ is not empty
  carry_.append(rest_.data(), len);
  rest_.remove_prefix(len + 1);
  std::string_view line = carry_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > max_) return fail(ec);
  carry_used_ = true;
  slow_ = true;
  ++copied_lines_;
  return line;
}

std::optional<std::string_view> line_splitter::finish(std::error_code& ec) {
  assert(rest_.empty());
  if (failed_) {
    ec = make_error_code(errc::line_too_long);
    return std::nullopt;
  }
  if (carry_used_) {
    carry_.clear();
    carry_used_ = false;
  }
  update_slow();
  if (carry_.empty()) return std::nullopt;
  // Without its "\n", a last line keeps a final "\r": only "\r\n" ends a line.
  if (carry_.size() > max_) return fail(ec);
  carry_used_ = true;
  slow_ = true;
  ++copied_lines_;
  return std::string_view(carry_);
}

void line_splitter::reset() noexcept {
  rest_ = {};
  carry_.clear();
  carry_used_ = false;
  failed_ = false;
  slow_ = false;
}

}  // namespace sluice
