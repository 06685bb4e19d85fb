// relp_frames: a byte-at-a-time state machine over the header, and a bulk
// copy for DATA, so that any chunking gives the same frames.
#include "sluice/syslog/relp_frames.h"

#include <algorithm>

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

std::size_t relp_frame_reader::step(std::string_view b) {
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
  out += std::to_string(txnr);
  out += ' ';
  out += command;
  out += ' ';
  out += std::to_string(data.size());
  if (!data.empty()) {
    out += ' ';
    out += data;
  }
  out += '\n';
}

int relp_rsp_code(std::string_view data) noexcept {
  int code = 0;
  std::size_t i = 0;
  for (; i < data.size() && i < 3 && data[i] >= '0' && data[i] <= '9'; ++i) code = code * 10 + (data[i] - '0');
  return i == 3 ? code : 0;
}

}  // namespace sluice
