#include "sluice/syslog/syslog_frames.h"

#include <cstdio>
#include <cstring>

namespace sluice {

bool syslog_frame_reader::fail(std::string why) {
  failed_ = true;
  error_ = std::move(why);
  return false;
}

// Reserves what a message needs, doubling as it comes, but never past
// `limit` (the body's length, or the maximum): a 64 KiB frame costs 64 KiB.
void syslog_frame_reader::grow(std::size_t need, std::size_t limit) {
  if (partial_.capacity() >= need) return;
  std::size_t cap = partial_.capacity() * 2;
  if (cap < need) cap = need;
  if (cap > limit) cap = limit;
  // Into a fresh string: reserve() itself would at least double.
  std::string bigger;
  bigger.reserve(cap);
  bigger.append(partial_);
  partial_.swap(bigger);
}

// A message gathered in partial_, then the buffer is given back: a
// connection between messages holds none (2,000 idle senders that each once
// sent a long message would otherwise keep it all).
void syslog_frame_reader::deliver_partial(const message_fn& on_message) {
  on_message(partial_);
  cut_ = false;
  if (partial_.capacity() > 256) std::string().swap(partial_);
  else partial_.clear();
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

// Octet counting, the common case: frames that lie whole in `data`, taken
// in a run without touching partial_ (a sender's write holds hundreds). It
// stops at the first frame that does not (cut off by the read's end, too
// long, or malformed), which octet() then takes a byte at a time, with its
// errors.
void syslog_frame_reader::octet_run(std::string_view data, std::size_t& i, const message_fn& on_message) {
  const char* const p = data.data();
  const std::size_t size = data.size();
  while (i < size) {
    std::size_t j = i;
    std::size_t want = 0;
    const std::size_t digits_end = size - i > max_digits_ ? i + max_digits_ : size;
    if (p[j] < '1' || p[j] > '9') return;
    for (; j < digits_end && p[j] >= '0' && p[j] <= '9'; ++j) want = want * 10 + static_cast<std::size_t>(p[j] - '0');
    if (j == size || p[j] != ' ' || want > max_ || size - (j + 1) < want) return;
    on_message(std::string_view(p + j + 1, want));
    i = j + 1 + want;
  }
}

bool syslog_frame_reader::octet(std::string_view data, std::size_t& i, const message_fn& on_message) {
  if (state_ == state::start) {
    octet_run(data, i, on_message);
    if (i == data.size()) return true;
  }
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
    if (want_ > max_) {
      if (!truncate_) return fail("message longer than " + std::to_string(max_) + " bytes (" + partial_ + ")");
      skip_ = want_ - max_;
      want_ = max_;
    }
    partial_.clear();
    state_ = state::body;
  }
  if (state_ == state::skip) {
    const std::size_t take = data.size() - i < skip_ ? data.size() - i : skip_;
    i += take;
    skip_ -= take;
    if (skip_ == 0) state_ = state::start;
    return true;
  }
  // The body: whole from `data` when it is all there, else gathered.
  const std::size_t need = want_ - partial_.size();
  const std::size_t have = data.size() - i;
  cut_ = skip_ > 0;
  if (partial_.empty() && have >= need) {
    on_message(data.substr(i, need));
    cut_ = false;
    i += need;
  } else {
    const std::size_t take = have < need ? have : need;
    grow(partial_.size() + take, want_);
    partial_.append(data.data() + i, take);
    i += take;
    if (partial_.size() < want_) {
      cut_ = false;
      return true;
    }
    deliver_partial(on_message);
  }
  state_ = skip_ > 0 ? state::skip : state::start;
  want_ = 0;
  return true;
}

bool syslog_frame_reader::lf(std::string_view data, std::size_t& i, const message_fn& on_message) {
  const char* nl = static_cast<const char*>(std::memchr(data.data() + i, '\n', data.size() - i));
  const std::size_t end = nl ? static_cast<std::size_t>(nl - data.data()) : data.size();
  if (skip_line_) {  // the rest of a cut line
    i = nl ? end + 1 : end;
    skip_line_ = !nl;
    return true;
  }
  if (partial_.size() + (end - i) > max_) {
    if (!truncate_) return fail("message longer than " + std::to_string(max_) + " bytes");
    // Its first max_ bytes now, the rest skipped up to the LF.
    cut_ = true;
    if (partial_.empty()) {
      on_message(data.substr(i, max_));
      cut_ = false;
    } else {
      grow(max_, max_);
      partial_.append(data.data() + i, max_ - partial_.size());
      deliver_partial(on_message);
    }
    i = nl ? end + 1 : end;
    skip_line_ = !nl;
    return true;
  }
  if (!nl) {
    grow(partial_.size() + (end - i), max_);
    partial_.append(data.data() + i, end - i);
    i = end;
    return true;
  }
  if (partial_.empty()) {
    if (end > i) on_message(data.substr(i, end - i));
  } else {
    grow(partial_.size() + (end - i), max_);
    partial_.append(data.data() + i, end - i);
    deliver_partial(on_message);
  }
  i = end + 1;
  return true;
}

}  // namespace sluice
