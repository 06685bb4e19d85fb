#include "sluice/syslog/syslog_frames.h"

#include <cstdio>
#include <cstring>

namespace sluice {

bool syslog_frame_reader::fail(std::string why) {
  failed_ = true;
  error_ = std::move(why);
  return false;
}

bool syslog_frame_reader::feed(std::string_view data, const message_fn& on_message) {
  if (failed_) return false;
  std::size_t i = 0;
  if (mode_ == mode::automatic && !data.empty()) {
    const char c = data[0];
    if (c >= '1' && c <= '9') {
      mode_ = mode::octet_counting;
    } else if (c == '<') {
      mode_ = mode::lf;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(c));
      return fail(std::string("neither octet counting nor LF framing (first byte ") + hex + ")");
    }
  }
  while (i < data.size()) {
    if (!(mode_ == mode::octet_counting ? octet(data, i, on_message) : lf(data, i, on_message))) return false;
  }
  return true;
}

bool syslog_frame_reader::octet(std::string_view data, std::size_t& i, const message_fn& on_message) {
  if (state_ == state::start || state_ == state::length) {
    // The digits, up to the space; at most as many as the maximum has. The
    // value is summed as they come (want_ is 0 at a frame's start).
    while (i < data.size() && data[i] != ' ') {
      const char c = data[i];
      if (c < '0' || c > '9' || (state_ == state::start && c == '0') || partial_.size() >= max_digits_)
        return fail("bad frame length '" + partial_ + std::string(1, c) + "'");
      partial_ += c;
      want_ = want_ * 10 + static_cast<std::size_t>(c - '0');
      state_ = state::length;
      ++i;
    }
    if (i == data.size()) return true;
    if (partial_.empty()) return fail("bad frame length ''");
    ++i;  // the space
    if (want_ > max_) return fail("message longer than " + std::to_string(max_) + " bytes (" + partial_ + ")");
    partial_.clear();
    state_ = state::body;
  }
  // The body: whole from `data` when it is all there, else gathered.
  const std::size_t need = want_ - partial_.size();
  const std::size_t have = data.size() - i;
  if (partial_.empty() && have >= need) {
    on_message(data.substr(i, need));
    i += need;
  } else {
    const std::size_t take = have < need ? have : need;
    partial_.append(data.data() + i, take);
    i += take;
    if (partial_.size() < want_) return true;
    on_message(partial_);
    partial_.clear();
  }
  state_ = state::start;
  want_ = 0;
  return true;
}

bool syslog_frame_reader::lf(std::string_view data, std::size_t& i, const message_fn& on_message) {
  const char* nl = static_cast<const char*>(std::memchr(data.data() + i, '\n', data.size() - i));
  const std::size_t end = nl ? static_cast<std::size_t>(nl - data.data()) : data.size();
  if (partial_.size() + (end - i) > max_) return fail("message longer than " + std::to_string(max_) + " bytes");
  if (!nl) {
    partial_.append(data.data() + i, end - i);
    i = end;
    return true;
  }
  if (partial_.empty()) {
    if (end > i) on_message(data.substr(i, end - i));
  } else {
    partial_.append(data.data() + i, end - i);
    on_message(partial_);
    partial_.clear();
  }
  i = end + 1;
  return true;
}

}  // namespace sluice
