// The load for perf/shipping/receive-compare.sh: SENDERS connections over
// loopback TCP (or a Unix socket: PORT is unix:PATH), each sending MESSAGES RFC 5424 messages of SIZE bytes,
// octet-counted ("LEN SP MSG"), as fast as the receiver takes them (blocking
// write()s of 64 KiB). Each message carries its sender and sequence number,
// so a lost or repeated one shows in the receiver's file.
//
// The receiver is measured, not this program: with --pid, its CPU time (all
// threads, from /proc/PID/stat) from the first connect until FILE holds
// every message's line (--file, --bytes: the size it must reach), and its
// peak RSS (VmHWM) then. A file that stops growing short of BYTES for
// --settle seconds ends the run as it is (the script counts what is lost).
//
//   syslog_flood PORT|unix:PATH [--senders N] [--messages M] [--size B]
//                [--pid PID --file FILE --bytes BYTES] [--settle S]
//
// Prints one JSON line: {"messages":N*M,"seconds":S,"send_seconds":S,
// "cpu_seconds":C,"sys_seconds":K,"hwm_kb":K,"file_bytes":F} (sys_seconds: the
// part of C spent in the kernel).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "syslog_flood: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

long number(const char* text, const char* name) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < 0) {
    std::fprintf(stderr, "syslog_flood: %s must be a number, not '%s'\n", name, text);
    std::exit(2);
  }
  return v;
}

constexpr int seq_digits = 10;

// One message of exactly `size` bytes; `seq_at` is where its sequence
// number's digits begin.
std::string message(int sender, std::size_t size, std::size_t& seq_at) {
  std::string m = "<134>1 2026-12-01T12:00:00.000000Z bench-host flood " + std::to_string(1000 + sender) +
                  " - - sender " + std::to_string(sender) + " seq ";
  seq_at = m.size();
  m += std::string(seq_digits, '0');
  m += " ";
  if (m.size() < size) m += std::string(size - m.size(), 'x');
  return m;
}

// Writes `count` frames: a buffer of frames whose sequence numbers are
// rewritten in place before each write.
void send_all(int port, const std::string& path, int sender, long count, std::size_t size) {
  const int fd = ::socket(path.empty() ? AF_INET : AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) die("socket");
  if (path.empty()) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("connect");
  } else {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.size() >= sizeof a.sun_path) die("unix: path too long");
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("connect");
  }

  std::size_t seq_at = 0;
  const std::string msg = message(sender, size, seq_at);
  const std::string frame = std::to_string(msg.size()) + " " + msg;
  const std::size_t seq_in_frame = frame.size() - msg.size() + seq_at;
  const std::size_t per_buffer = std::max<std::size_t>(1, 64 * 1024 / frame.size());
  std::string buf;
  for (std::size_t i = 0; i < per_buffer; ++i) buf += frame;

  long seq = 0;
  while (seq < count) {
    const std::size_t n = static_cast<std::size_t>(std::min<long>(static_cast<long>(per_buffer), count - seq));
    for (std::size_t i = 0; i < n; ++i, ++seq) {
      char* p = buf.data() + i * frame.size() + seq_in_frame + seq_digits;
      for (long v = seq, d = 0; d < seq_digits; ++d, v /= 10) *--p = static_cast<char>('0' + v % 10);
    }
    const char* p = buf.data();
    std::size_t left = n * frame.size();
    while (left > 0) {
      const ssize_t w = ::write(fd, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        die("write");
      }
      p += w;
      left -= static_cast<std::size_t>(w);
    }
  }
  ::close(fd);
}

// The receiver's CPU seconds, all threads: user + system, or system alone.
double cpu_seconds(long pid, bool sys_only = false) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command's closing parenthesis: state is field 3,
  // utime 14, stime 15.
  const std::size_t close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> f;
  std::size_t i = close + 2;
  while (i < s.size()) {
    const std::size_t sp = s.find(' ', i);
    f.push_back(s.substr(i, sp - i));
    if (sp == std::string::npos) break;
    i = sp + 1;
  }
  if (f.size() < 13) return 0;
  return static_cast<double>((sys_only ? 0 : std::stol(f[11])) + std::stol(f[12])) /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

long hwm_kb(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return 0;
}

long long file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: syslog_flood PORT|unix:PATH [--senders N] [--messages M] [--size B] [--pid PID --file FILE --bytes "
                 "BYTES] [--settle S]\n");
    return 2;
  }
  const std::string where = argv[1];
  const std::string path = where.rfind("unix:", 0) == 0 ? where.substr(5) : "";
  const long port = path.empty() ? number(argv[1], "PORT") : 0;
  long senders = 8, messages = 125000, size = 120, pid = 0, settle = 5;
  long long bytes = 0;
  std::string file;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    if (opt == "--senders") senders = number(argv[i + 1], "--senders");
    else if (opt == "--messages") messages = number(argv[i + 1], "--messages");
    else if (opt == "--size") size = number(argv[i + 1], "--size");
    else if (opt == "--pid") pid = number(argv[i + 1], "--pid");
    else if (opt == "--file") file = argv[i + 1];
    else if (opt == "--bytes") bytes = number(argv[i + 1], "--bytes");
    else if (opt == "--settle") settle = number(argv[i + 1], "--settle");
    else {
      std::fprintf(stderr, "syslog_flood: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }

  const double cpu0 = pid ? cpu_seconds(pid) : 0, sys0 = pid ? cpu_seconds(pid, true) : 0;
  const auto t0 = clock_type::now();
  std::vector<std::thread> threads;
  for (long s = 0; s < senders; ++s)
    threads.emplace_back(send_all, static_cast<int>(port), path, static_cast<int>(s), messages,
                         static_cast<std::size_t>(size));
  for (auto& t : threads) t.join();
  const auto sent = clock_type::now();

  // The receiver is done when its file holds every line, or when the file
  // has not grown for `settle` seconds.
  auto done = sent;
  long long have = 0;
  if (!file.empty()) {
    auto last_growth = clock_type::now();
    for (;;) {
      const long long now_size = file_size(file);
      if (now_size != have) {
        have = now_size;
        last_growth = clock_type::now();
      }
      if (have >= bytes) break;
      if (clock_type::now() - last_growth > std::chrono::seconds(settle)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    done = have >= bytes ? clock_type::now() : last_growth;
  }
  const double cpu = pid ? cpu_seconds(pid) - cpu0 : 0, sys = pid ? cpu_seconds(pid, true) - sys0 : 0;
  std::printf("{\"messages\":%ld,\"seconds\":%.4f,\"send_seconds\":%.4f,\"cpu_seconds\":%.3f,\"sys_seconds\":%.3f,\"hwm_kb\":%ld,"
              "\"file_bytes\":%lld}\n",
              senders * messages, std::chrono::duration<double>(done - t0).count(),
              std::chrono::duration<double>(sent - t0).count(), cpu, sys, pid ? hwm_kb(pid) : 0L, have);
  return 0;
}
