// libFuzzer harness: the RELP frame reader (relp_frame_reader) and the
// receiving session over it (relp_session), as sluice-logd --listen-relp
// runs them on what a sender sends.
//
// Input: [max][seed][acks] then the data.
//   - The data is fed whole to one reader and in chunks of 0 to 16 bytes
//     (sizes from `seed`) to another: both must give the same frames, the
//     same success and the same error. Each frame is within the limits the
//     header promises (TXNR at most 9 digits, a command of 1 to 32 letters,
//     DATA at most `max`); a failed reader takes nothing more; mid_frame()
//     is false after the last whole frame when nothing follows it.
//   - The frames read, written again with append_relp_frame() and read back:
//     the same frames, the whole text, nothing left mid-frame.
//   - The data, as one frame's DATA, written and read back: that frame.
//   - The data through a relp_session, chunked likewise, the stored
//     messages acknowledged after every `acks`-th chunk: every byte it
//     writes is a whole rsp frame (200 OK), numbered as the transactions
//     it took; messages are only those of syslog frames; a failed session
//     takes nothing more.
//
// With RELP_FUZZ_SEEDS=DIR set, the harness writes seeds there instead:
// sessions as relp_writable's sender writes them (append_relp_frame()).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/syslog/relp_frames.h"
#include "sluice/syslog/relp_session.h"

namespace {

using sluice::relp_frame;
using sluice::relp_frame_reader;

void check(bool c) {
  if (!c) std::abort();
}

struct frame {
  std::uint32_t txnr;
  std::string command;
  std::string data;
  bool operator==(const frame&) const = default;
};

struct outcome {
  std::vector<frame> frames;
  bool ok = true;
  bool mid_frame = false;
  std::string error;
  bool operator==(const outcome&) const = default;
};

// Chunk sizes 0 to 16, from `seed`; a copy of each chunk, freed after the
// call, so that a frame that points into an earlier chunk is caught.
template <class F>
void chunked(std::string_view data, int seed, F&& feed) {
  std::uint32_t x = static_cast<std::uint32_t>(seed) * 2654435761u + 1;
  while (!data.empty()) {
    x = x * 1103515245u + 12345u;
    const std::size_t n = std::min<std::size_t>((x >> 16) % 17, data.size());
    const std::string chunk(data.substr(0, n));
    data.remove_prefix(n);
    if (!feed(std::string_view(chunk))) return;
  }
}

outcome read_all(std::size_t max, std::string_view data, int seed) {
  outcome o;
  relp_frame_reader r(max);
  const auto take = [&](const relp_frame& f) {
    check(f.txnr <= 999'999'999);
    check(!f.command.empty() && f.command.size() <= relp_frame_reader::max_command);
    for (char c : f.command) check((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
    check(f.data.size() <= max);
    o.frames.push_back({f.txnr, f.command, f.data});
  };
  if (seed < 0) {
    o.ok = r.feed(data, take);
  } else {
    chunked(data, seed, [&](std::string_view c) { return o.ok = r.feed(c, take); });
  }
  o.mid_frame = r.mid_frame();
  if (!o.ok) {
    o.error = r.error();
    check(!o.error.empty());
    const std::size_t before = o.frames.size();
    check(!r.feed("1 syslog 1 x\n", take));
    check(o.frames.size() == before);
  } else {
    check(r.error().empty());
  }
  return o;
}

std::string write_all(const std::vector<frame>& frames) {
  std::string out;
  for (const frame& f : frames) sluice::append_relp_frame(out, f.txnr, f.command, f.data);
  return out;
}

void frames(std::size_t max, std::string_view data, int seed) {
  const outcome whole = read_all(max, data, -1);
  const outcome parts = read_all(max, data, seed);
  check(whole == parts);
  // Written again and read back: the same frames, and nothing more.
  const std::string again = write_all(whole.frames);
  const outcome back = read_all(max, again, seed);
  check(back.ok && !back.mid_frame && back.frames == whole.frames);
  // A good stream that is just its frames is not left mid-frame.
  if (whole.ok && again == data) check(!whole.mid_frame);
}

void round_trip(std::size_t max, std::string_view data, int seed) {
  if (data.size() > max) return;
  const std::uint32_t txnr = 1 + static_cast<std::uint32_t>(data.size()) * 7919u % 999'999'999u;
  std::string command = "syslog";
  if (seed & 1) command = std::string(relp_frame_reader::max_command, 'z');
  std::string out;
  sluice::append_relp_frame(out, txnr, command, data);
  const outcome o = read_all(max, out, seed);
  check(o.ok && !o.mid_frame && o.frames.size() == 1);
  check(o.frames[0] == (frame{txnr, command, std::string(data)}));
}

// What the session wrote: whole rsp frames, each "200 OK" (the open's with
// its offers), for the transactions it took, in order.
void session(std::size_t max, std::string_view data, int seed, int acks) {
  sluice::relp_session s(max);
  std::string out;
  std::vector<std::string> messages;
  std::size_t chunks = 0;
  bool ok = true;
  chunked(data, seed, [&](std::string_view c) {
    const std::size_t before = messages.size();
    const std::size_t unanswered = s.unanswered();
    ok = s.feed(c, out, [&](std::string_view m) { messages.emplace_back(m); });
    check(s.unanswered() == unanswered + (messages.size() - before));
    if (!ok) return false;
    if (acks != 0 && ++chunks % static_cast<std::size_t>(acks) == 0) {
      while (s.unanswered() != 0) s.ack_next(out);
      if (s.close_due()) s.answer_close(out);
    }
    return true;
  });
  if (!ok) {
    check(!s.error().empty());
    const std::size_t before = messages.size();
    check(!s.feed("1 syslog 1 x\n", out, [&](std::string_view m) { messages.emplace_back(m); }));
    check(messages.size() == before);
  }
  while (s.unanswered() != 0) s.ack_next(out);
  if (s.close_due()) s.answer_close(out);
  if (s.close_asked()) check(s.close_answered());
  relp_frame_reader r(1024);
  std::size_t answers = 0, opens = 0;
  check(r.feed(out, [&](const relp_frame& f) {
    check(f.command == "rsp");
    check(sluice::relp_rsp_code(f.data) == 200);
    ++answers;
    opens += f.data.size() > 6;
  }));
  check(!r.mid_frame());
  check(opens == (s.open() ? 1u : 0u));
  check(answers == opens + messages.size() + (s.close_answered() ? 1u : 0u));
}

void spit(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  check(f.good());
}

// [max][seed][acks] and the frames.
void write_seeds(const std::string& dir) {
  const auto seed = [&](const std::string& name, char max, char acks, const std::vector<frame>& fs) {
    spit(dir + "/" + name, std::string{max, '\x07', acks} + write_all(fs));
  };
  const std::string offers = "relp_version=0\nrelp_software=librelp,1.11.0,http://librelp.adiscon.com\ncommands=syslog";
  seed("session", '\xff', 1,
       {{1, "open", offers}, {2, "syslog", "<13>1 2026-12-03T10:00:00Z host app 1 - - hello"},
        {3, "syslog", "<13>1 2026-12-03T10:00:01Z host app 1 - - again"}, {4, "close", ""}});
  seed("session-unacked", '\xff', 0, {{1, "open", offers}, {2, "syslog", "one"}, {3, "syslog", "two"}});
  seed("wrap", '\xff', 2, {{999'999'998, "open", offers}, {999'999'999, "syslog", "x"}, {1, "syslog", "y"}});
  seed("small-max", 20, 3, {{1, "open", "0123456789"}, {2, "syslog", "01234567890123456789"}});
  seed("rsp", 40, 1, {{1, "rsp", "200 OK"}, {0, "serverclose", ""}});
  seed("second-open", '\xff', 1, {{1, "open", offers}, {2, "open", offers}});
  spit(dir + "/torn", std::string{'\xff', '\x07', '\x01'} + "1 open 5 relp_v");
  spit(dir + "/bad-trailer", std::string{'\xff', '\x07', '\x01'} + "1 open 3 abcX");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* out = std::getenv("RELP_FUZZ_SEEDS")) {
    write_seeds(out);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size < 3) return 0;
  // Small limits, where the edges are, and now and then librelp's default.
  const std::size_t max = bytes[0] == 0xff ? 128 * 1024 : bytes[0] % 64;
  const int seed = bytes[1];
  const int acks = bytes[2] % 4;
  const std::string_view data(reinterpret_cast<const char*>(bytes + 3), size - 3);
  frames(max, data, seed);
  round_trip(max, data, seed);
  session(max, data, seed, acks);
  (void)sluice::relp_rsp_code(data);
  return 0;
}
