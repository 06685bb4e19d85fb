#include "sluice/syslog/syslog_format.h"

#include <unistd.h>

#include <charconv>
#include <climits>
#include <cstdio>
#include <stdexcept>

namespace sluice::detail {
namespace {

// RFC 5424 6.2: header fields are PRINTUSASCII, with their own maximum sizes.
std::string field(std::string_view v, std::size_t max) {
  if (v.empty()) return "-";
  std::string out(v.substr(0, max));
  for (char& c : out)
    if (c < 33 || c > 126) c = '_';
  return out;
}

std::string own_hostname() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "-";
  return buf;
}

}  // namespace

const char* syslog_header_problem(const syslog_header& h) noexcept {
  if (h.facility > 23) return "syslog facility must be 0 to 23";
  if (h.severity > 7) return "syslog severity must be 0 to 7";
  return nullptr;
}

syslog_formatter::syslog_formatter(const syslog_header& h, syslog_framing framing) : framing_(framing) {
  if (const char* why = syslog_header_problem(h)) throw std::invalid_argument(why);
  pri_ = "<" + std::to_string(h.facility * 8 + h.severity) + ">1 ";
  fixed_ = " " + field(h.hostname.empty() ? own_hostname() : h.hostname, 255) + " " + field(h.app_name, 48) + " " +
           field(h.procid.empty() ? std::to_string(::getpid()) : h.procid, 128) + " " + field(h.msgid, 32) + " - ";
}

std::string_view syslog_formatter::stamp(const timespec& now) {
  // The date and time change once a second: formatted then; the
  // microseconds every message.
  if (now.tv_sec != last_sec_) {
    last_sec_ = now.tv_sec;
    tm t{};
    ::gmtime_r(&now.tv_sec, &t);
    stamp_len_ = std::strftime(stamp_, sizeof stamp_, "%Y-%m-%dT%H:%M:%S.", &t);
  }
  long us = now.tv_nsec / 1000;
  char* p = stamp_ + stamp_len_ + 6;
  for (int i = 0; i < 6; ++i, us /= 10) *--p = static_cast<char>('0' + us % 10);
  stamp_[stamp_len_ + 6] = 'Z';
  return {stamp_, stamp_len_ + 7};
}

void syslog_formatter::append(std::string& out, std::string_view msg, const timespec& now) {
  const std::string_view ts = stamp(now);
  const std::size_t len = pri_.size() + ts.size() + fixed_.size() + msg.size();
  if (framing_ == syslog_framing::octet_counting) {
    // to_chars, not snprintf: the length is most of a frame's formatting
    // cost through printf's machinery (about 600 instructions a message).
    char digits[24];
    char* end = std::to_chars(digits, digits + sizeof digits - 1, len).ptr;
    *end++ = ' ';
    out.append(digits, static_cast<std::size_t>(end - digits));
  }
  out += pri_;
  out += ts;
  out += fixed_;
  if (framing_ == syslog_framing::octet_counting) {
    out += msg;
    return;
  }
  const std::size_t at = out.size();
  out += msg;
  for (std::size_t i = at; i < out.size(); ++i)
    if (out[i] == '\n') out[i] = ' ';
  out += '\n';
}

}  // namespace sluice::detail
