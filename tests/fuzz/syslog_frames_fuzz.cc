// libFuzzer harness: sluice-logd's frame reader (syslog_frame_reader, in
// its three modes) and the RFC 5424 formatter whose output it reads.
//
// Input: [mode][max][seed][fields] then the data.
//   - The data is fed whole to one reader and in chunks of 0 to 16 bytes
//     (sizes from `seed`) to another: both must give the same messages, the
//     same success and the same error. Every message is at most `max` bytes;
//     in LF framing none holds a LF or is empty; a failed reader takes
//     nothing more; mid_frame() is false after a whole frame.
//   - The data, as one message, through syslog_formatter (octet counting
//     and LF framing, header fields from `fields`) and back through a
//     reader: exactly one message, the frame's body, ending with the data
//     (LF framing: LFs as spaces).
// sluice-logd's escaping of a message into a line is the tool's own code
// and is not reached from here.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/syslog/syslog_format.h"
#include "sluice/syslog/syslog_frames.h"

namespace {

using reader = sluice::syslog_frame_reader;

struct outcome {
  std::vector<std::string> messages;
  bool ok = true;
  std::string error;
  bool operator==(const outcome&) const = default;
};

void check(bool c) {
  if (!c) std::abort();
}

outcome read_all(reader::mode m, std::size_t max, std::string_view data, int seed) {
  outcome o;
  reader r(m, max);
  const auto take = [&](std::string_view msg) { o.messages.emplace_back(msg); };
  if (seed < 0) {
    o.ok = r.feed(data, take);
  } else {
    std::uint32_t x = static_cast<std::uint32_t>(seed) * 2654435761u + 1;
    while (o.ok && !data.empty()) {
      x = x * 1103515245u + 12345u;
      const std::size_t n = std::min<std::size_t>((x >> 16) % 17, data.size());
      // A copy of its own, freed after the call: a message must not point
      // into a chunk fed before.
      const std::string chunk(data.substr(0, n));
      data.remove_prefix(n);
      o.ok = r.feed(chunk, take);
    }
  }
  if (!o.ok) {
    o.error = r.error();
    check(!o.error.empty());
    // Failed: nothing more is taken.
    const std::size_t before = o.messages.size();
    check(!r.feed("1 x<1>y\n", take));
    check(o.messages.size() == before);
  }
  for (const std::string& msg : o.messages) {
    check(msg.size() <= max);
    if (r.framing() == reader::mode::lf) check(!msg.empty() && msg.find('\n') == std::string::npos);
  }
  if (m != reader::mode::automatic) check(r.framing() == m);
  return o;
}

void frames(reader::mode m, std::size_t max, std::string_view data, int seed) {
  const outcome whole = read_all(m, max, data, -1);
  const outcome chunked = read_all(m, max, data, seed);
  check(whole == chunked);
}

// One message out through the formatter and back through a reader.
void round_trip(std::string_view fields, std::string msg, sluice::syslog_framing framing) {
  sluice::syslog_header h;
  h.facility = fields.empty() ? 1 : static_cast<unsigned char>(fields[0]) % 24;
  h.severity = fields.size() < 2 ? 6 : static_cast<unsigned char>(fields[1]) % 8;
  std::vector<std::string> parts(4);
  std::size_t k = 0;
  for (std::size_t i = 2; i < fields.size(); ++i) {
    if (fields[i] == '\0') {
      if (++k == parts.size()) break;
    } else {
      parts[k] += fields[i];
    }
  }
  h.hostname = parts[0].empty() ? "host" : parts[0];
  h.app_name = parts[1];
  h.procid = parts[2].empty() ? "1" : parts[2];
  h.msgid = parts[3];
  sluice::detail::syslog_formatter f(h, framing);
  std::string out;
  const timespec now{1'700'000'000 + static_cast<time_t>(msg.size()), static_cast<long>(msg.size() % 1'000'000'000)};
  f.append(out, msg, now);
  check(out.size() <= f.framed_size_max(msg.size()));
  std::vector<std::string> got;
  reader r(reader::mode::automatic, out.size() + 1);
  check(r.feed(out, [&](std::string_view m) { got.emplace_back(m); }));
  check(!r.mid_frame());
  check(got.size() == 1);
  const std::string& body = got[0];
  check(body.size() >= 8 && body[0] == '<');
  if (framing == sluice::syslog_framing::lf) {
    check(r.framing() == reader::mode::lf);
    for (char& c : msg)
      if (c == '\n') c = ' ';
    check(out == body + "\n");
  } else {
    check(r.framing() == reader::mode::octet_counting);
    check(out == std::to_string(body.size()) + " " + body);
  }
  check(body.size() >= msg.size() && body.compare(body.size() - msg.size(), msg.size(), msg) == 0);
  // The header's fields are PRINTUSASCII: no space, LF or NUL inside one.
  const std::size_t header_end = body.size() - msg.size();
  for (std::size_t i = 0; i < header_end; ++i) check(body[i] >= 32 && body[i] <= 126);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size < 4) return 0;
  const reader::mode m = bytes[0] % 3 == 0 ? reader::mode::automatic
                         : bytes[0] % 3 == 1 ? reader::mode::octet_counting
                                             : reader::mode::lf;
  // Small limits, where the edges are, and now and then sluice-logd's default.
  const std::size_t max = bytes[1] == 0xff ? 64 * 1024 : 1 + bytes[1] % 40;
  const std::size_t nfields = bytes[3] % 32;
  const std::string_view rest(reinterpret_cast<const char*>(bytes + 4), size - 4);
  const std::string_view fields = rest.substr(0, std::min(nfields, rest.size()));
  const std::string_view data = rest.substr(fields.size());
  frames(m, max, data, bytes[2]);
  const std::string msg(data.substr(0, 4096));
  round_trip(fields, msg, sluice::syslog_framing::octet_counting);
  round_trip(fields, msg, sluice::syslog_framing::lf);
  return 0;
}
