// relp_frames: a frame whose header is whole in the bytes at hand is read
// by scan(), in runs over the buffer; anything else (a header cut by the
// chunking, a malformed one) by a byte-at-a-time state machine, so that any
// chunking gives the same frames and the same errors.
#include "sluice/syslog/relp_frames.h"

#include <algorithm>
#include <charconv>

namespace sluice {

void relp_frame_reader::reset() noexcept {
  state_ = state::txnr;
  digits_ = 0;
  number_ = 0;
  frame_.txnr = 0;
  frame_.command.clear();
  frame_.data.clear();
}

void relp_frame_reader::fail(std::string why) { error_ = "RELP: " + std::move(why); }

namespace {

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool is_letter(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// The longest command append_relp_frame() puts in its stack buffer; a
// longer one (only ever a test's) is appended on its own.
constexpr std::size_t max_command_written = 32;

}  // namespace

// The fast path, at the start of a frame: reads a whole, well-formed header
// and then as much of DATA and its LF as the bytes hold. It returns 0 and
// takes nothing when the header is cut short or breaks a rule, so that
// step() reads it a byte at a time and fails with the exact error (or waits
// for the rest). A header is a few bytes: plain loops over the buffer beat
// memchr() calls there, and what this saves is a call, a switch and a
// bounds check a byte.
std::size_t relp_frame_reader::scan(std::string_view b) {
  const char* const p = b.data();
  const std::size_t n = b.size();
  std::size_t i = 0;
  std::uint32_t txnr = 0;
  for (; i < n && i <= max_txnr_digits && is_digit(p[i]); ++i) txnr = txnr * 10 + unsigned(p[i] - '0');
  if (i == 0 || i > max_txnr_digits || i == n || p[i] != ' ') return 0;
  const std::size_t command = ++i;
  for (; i < n && i - command <= max_command && is_letter(p[i]); ++i) {
  }
  const std::size_t command_size = i - command;
  if (command_size == 0 || command_size > max_command || i == n || p[i] != ' ') return 0;
  const std::size_t datalen = ++i;
  std::uint64_t len = 0;
  for (; i < n && i - datalen <= max_datalen_digits && is_digit(p[i]); ++i) len = len * 10 + unsigned(p[i] - '0');
  if (i == datalen || i - datalen > max_datalen_digits || i == n || len > max_data_) return 0;
  if (len == 0 ? p[i] != '\n' : p[i] != ' ') return 0;
  ++i;
  frame_.txnr = txnr;
  frame_.command.assign(p + command, command_size);
  if (len == 0) {
    complete_ = true;
    return i;
  }
  number_ = len;
  const std::size_t take = std::min<std::size_t>(n - i, len);
  frame_.data.assign(p + i, take);
  i += take;
  if (take < len) {
    state_ = state::data;
    return i;
  }
  if (i == n || p[i] != '\n') {
    // The trailer state says why a wrong byte there is an error.
    state_ = state::trailer;
    return i;
  }
  complete_ = true;
  return i + 1;
}

std::size_t relp_frame_reader::step(std::string_view b) {
  if (state_ == state::txnr && digits_ == 0) {
    if (const std::size_t used = scan(b)) return used;
  }
  const char c = b[0];
  const bool digit = c >= '0' && c <= '9';
  switch (state_) {
    case state::txnr:
      if (digit) {
        if (++digits_ > max_txnr_digits) return fail("transaction number longer than 9 digits"), 1;
        number_ = number_ * 10 + unsigned(c - '0');
        return 1;
      }
      if (c == ' ' && digits_ > 0) {
        // librelp: 0 only in a server's unsolicited serverclose.
        frame_.txnr = static_cast<std::uint32_t>(number_);
        state_ = state::command;
        digits_ = 0;
        number_ = 0;
        return 1;
      }
      return fail(digits_ == 0 ? "a frame starts with a byte that is not a transaction number digit" : "no space after the transaction number"), 1;
    case state::command:
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        if (frame_.command.size() == max_command) return fail("command longer than 32 letters"), 1;
        frame_.command.push_back(c);
        return 1;
      }
      if (c == ' ' && !frame_.command.empty()) {
        state_ = state::datalen;
        return 1;
      }
      return fail(frame_.command.empty() ? "empty command" : "a command holds a byte that is not a letter"), 1;
    case state::datalen:
      if (digit) {
        if (++digits_ > max_datalen_digits) return fail("DATALEN longer than 9 digits"), 1;
        number_ = number_ * 10 + unsigned(c - '0');
        if (number_ > max_data_) return fail("DATALEN " + std::to_string(number_) + "... over the maximum of " + std::to_string(max_data_)), 1;
        return 1;
      }
      if (digits_ == 0) return fail("no DATALEN"), 1;
      if (number_ == 0) {
        if (c != '\n') return fail("DATALEN 0 not followed by LF"), 1;
        complete_ = true;
        return 1;
      }
      if (c != ' ') return fail("no space after DATALEN"), 1;
      state_ = state::data;
      frame_.data.reserve(number_);
      return 1;
    case state::data: {
      const std::size_t take = std::min<std::size_t>(b.size(), number_ - frame_.data.size());
      frame_.data.append(b.substr(0, take));
      if (frame_.data.size() == number_) state_ = state::trailer;
      return take;
    }
    case state::trailer:
      if (c != '\n') return fail("frame not ended by LF after DATALEN bytes"), 1;
      complete_ = true;
      return 1;
  }
  return fail("internal state"), 1;
}

void append_relp_frame(std::string& out, std::uint32_t txnr, std::string_view command, std::string_view data) {
  // The header in a stack buffer and then one append each for it and DATA:
  // std::to_string()'s two temporaries and seven appends cost more than the
  // 80-byte message they frame.
  char head[10 + 1 + max_command_written + 1 + 20 + 1];
  char* const end = head + sizeof head;
  char* h = std::to_chars(head, end, txnr).ptr;
  if (command.size() <= max_command_written) {
    *h++ = ' ';
    h = std::copy(command.begin(), command.end(), h);
    *h++ = ' ';
  } else {
    out.append(head, h);
    out += ' ';
    out += command;
    h = head;
    *h++ = ' ';
  }
  h = std::to_chars(h, end, data.size()).ptr;
  if (data.empty()) {
    *h++ = '\n';
    out.append(head, h);
    return;
  }
  *h++ = ' ';
  out.append(head, h);
  out.append(data);
  out += '\n';
}

int relp_rsp_code(std::string_view data) noexcept {
  int code = 0;
  std::size_t i = 0;
  for (; i < data.size() && i < 3 && data[i] >= '0' && data[i] <= '9'; ++i) code = code * 10 + (data[i] - '0');
  return i == 3 ? code : 0;
}

}  // namespace sluice
